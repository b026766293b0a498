/**
 * A real client: openapi-fetch, typed by the types generated from openapi.yaml
 * (`paths` of service/generated/openapi.ts), against a listening app. What the
 * compiler accepts is what the service answers: create (200 Plant), idempotent
 * replay, conflict (409 Error), no token (401 Error). An int64 is a `bigint` in
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
/** A client of the service, authorized with a valid bearer token. */
const bodySerializer = (body: unknown) => stringify(body)!
const client = createClient<paths>({ baseUrl: url, bodySerializer, headers: { authorization: `Bearer ${TOKEN}` } })
const monstera = { id: 9007199254740993n, name: 'Monstera deliciosa', tag: 'indoor' }

t.test('create: 200 with the Plant as typed data, no error', async (t) => {
  const { data, error, response } = await client.POST('/plants', { body: monstera })
  t.equal(response.status, 200)
  t.equal(error, undefined)
  const plant: Plant | undefined = data
  t.strictSame(plant, { name: monstera.name, tag: monstera.tag })
})

t.test('idempotent replay: the same body again is 200 with the same Plant', async (t) => {
  const { data, response } = await client.POST('/plants', { body: monstera })
  t.equal(response.status, 200)
  t.strictSame(data, { name: monstera.name, tag: monstera.tag })
})

t.test('conflict: the same id with other content is 409 with a typed Error body', async (t) => {
  const { data, error, response } = await client.POST('/plants', { body: { id: monstera.id, name: 'Ficus lyrata' } })
  t.equal(response.status, 409)
  t.equal(data, undefined)
  const body: ErrorBody | undefined = error
  t.equal(body?.error, 409, 'error equals the status')
  t.match(body?.message, /\b9007199254740993\b/, 'the message names the id exactly')
})

t.test('no token: 401 with a typed Error body and the bearer challenge', async (t) => {
  const anonymous = createClient<paths>({ baseUrl: url, bodySerializer })
  const { error, response } = await anonymous.POST('/plants', { body: { id: 2n, name: 'Ficus lyrata' } })
  t.equal(response.status, 401)
  const body: ErrorBody | undefined = error
  t.equal(body?.error, 401)
  t.match(response.headers.get('www-authenticate'), /^Bearer realm="plant-store"/)
})

t.test('what the generated types refuse, the service refuses too: a string id is 400', async (t) => {
  // @ts-expect-error -- NewPlant.id is an int64, a bigint: the compiler rejects a string.
  const { error, response } = await client.POST('/plants', { body: { id: '3', name: 'Fern' } })
  t.equal(response.status, 400)
  t.match(error, { error: 400, message: /body\/id/ })
})
