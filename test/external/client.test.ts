/**
 * A real client: openapi-fetch, typed by the types generated from openapi.yaml
 * (`paths` of service/generated/openapi.ts), against a listening app. What the
 * compiler accepts is what the service answers: create (200 Plant), idempotent
 * replay, conflict (409 Error), a string id (400 Error). An int64 is a `bigint` in
 * those types, so the client serializes bodies with lossless-json, which writes it
 * exactly (`JSON.stringify` refuses a bigint).
 *
 * @module
 */
import { stringify } from 'lossless-json'
import createClient from 'openapi-fetch'
import t from 'tap'
import type { components, paths } from '../../service/generated/openapi.js'
import { listen, TOKEN } from '../helpers/app.js'

type Plant = components['schemas']['Plant']
type ErrorBody = components['schemas']['Error']

const { url } = await listen(t)
const bodySerializer = (body: unknown) => stringify(body)!
const client = createClient<paths>({ baseUrl: url, bodySerializer, headers: { authorization: `Bearer ${TOKEN}` } })
const monstera = { id: 9007199254740993n, name: 'Monstera deliciosa', tag: 'indoor' }

t.test('create is 200 with the Plant as typed data, a replay the same; other content is 409 with a typed Error naming the id exactly', async (t) => {
  for (const attempt of ['create', 'replay']) {
    const { data, error, response } = await client.POST('/plants', { body: monstera })
    t.equal(response.status, 200, attempt)
    t.equal(error, undefined)
    const plant: Plant | undefined = data
    t.strictSame(plant, { name: monstera.name, tag: monstera.tag })
  }
  const { data, error, response } = await client.POST('/plants', { body: { id: monstera.id, name: 'Ficus lyrata' } })
  t.equal(response.status, 409)
  t.equal(data, undefined)
  const body: ErrorBody | undefined = error
  t.match(body, { error: 409, message: /\b9007199254740993\b/ }, 'error equals the status, the message names the id exactly')
})

t.test('a string id, refused by the types, is 400 with a typed Error naming the field', async (t) => {
  // @ts-expect-error -- NewPlant.id is an int64, a bigint: the compiler rejects a string.
  const { error, response } = await client.POST('/plants', { body: { id: '3', name: 'Fern' } })
  t.equal(response.status, 400)
  const body: ErrorBody | undefined = error
  t.match(body, { error: 400, message: /body\/id/ })
})
