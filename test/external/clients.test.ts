/**
 * client/plant-store-client.ts and openapi-fetch (typed by the generated `paths`) against a listening service: what the
 * compiler accepts is what the service answers, int64 ids exact.
 */
import { stringify } from 'lossless-json'
import createClient from 'openapi-fetch'
import t, { type Test } from 'tap'
import {
  type CreatePlantResult,
  type CreatePlantStatus,
  PlantStoreClient,
  PlantStoreNetworkError,
  PlantStoreResponseError,
  readCreatePlantResponse,
} from '../../client/plant-store-client.ts'
import type { components, operations, paths } from '../../service/generated/openapi.ts'
import { listen, TOKEN } from '../helpers/app.ts'
import { freePort } from '../helpers/machine.ts'
import { partitionProxy } from '../helpers/partition-proxy.ts'

type Plant = components['schemas']['Plant']
type ErrorBody = components['schemas']['Error']

/** True when `A` and `B` are the same type. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
// Every status the contract declares for createPlant is a result, and nothing else is.
const statusesAreTheContracts: Equals<CreatePlantResult['status'], keyof operations['createPlant']['responses']> = true
const statusesAreExported: Equals<CreatePlantStatus, CreatePlantResult['status']> = true
void [statusesAreTheContracts, statusesAreExported]

const { url } = await listen(t)
const client = new PlantStoreClient({ baseUrl: url, token: TOKEN })

const [EDGE, INT64_MAX] = [2n ** 53n, 2n ** 63n - 1n]
/** Neighbours that one double cannot tell apart: each must be a plant of its own. */
const IDS = [EDGE, -EDGE, -INT64_MAX, INT64_MAX].flatMap((id) => [id - 1n, id, id + 1n]).filter((id) => id <= INT64_MAX)

/** Narrows a result to `status`, else fails; an Error body's `error` is the status. */
function expectStatus<S extends CreatePlantStatus>(
  t: Test,
  result: CreatePlantResult,
  status: S,
  message?: RegExp,
): Extract<CreatePlantResult, { status: S }> {
  t.equal(result.status, status, `status ${status}`)
  if (result.status !== status)
    throw new Error(`expected ${status}, got ${result.status}: ${JSON.stringify(result.body)}`)
  if (message !== undefined) t.match(result.body, { error: status, message })
  return result as Extract<CreatePlantResult, { status: S }>
}

t.test(
  'ids beyond 2^53 and at the int64 limits: created, replayed and conflicting exactly; outside int64, 400',
  async (t) => {
    for (const attempt of ['created (no neighbour took its place)', 'replayed'])
      for (const id of IDS) {
        const plant = { name: `plant ${id}`, tag: 'int64' }
        const body: Plant = expectStatus(t, await client.createPlant({ id, ...plant }), 200).body
        t.strictSame(body, plant, `${id}: ${attempt}`)
      }
    for (const id of IDS) {
      const other = await client.createPlant({ id, name: 'another name', tag: 'int64' })
      expectStatus(t, other, 409, new RegExp(`with id ${id} already exists`))
    }
    for (const id of [INT64_MAX + 1n, -INT64_MAX - 2n])
      expectStatus(t, await client.createPlant({ id, name: 'out of range' }), 400, /body\/id must match format "int64"/)
  },
)

t.test(
  'the body narrows to Plant on 200, to Error on 401 (with the challenge); a base URL with a trailing slash works ' +
    'alike',
  async (t) => {
    const result = await new PlantStoreClient({ baseUrl: new URL(`${url}/`), token: TOKEN }).createPlant({
      id: 8n,
      name: 'Monstera deliciosa',
    })
    if (result.status !== 200) return t.fail(`expected 200, got ${result.status}`)
    const name: string = result.body.name
    // @ts-expect-error -- a Plant has no message.
    void result.body.message
    t.strictSame(result.body, { name: 'Monstera deliciosa' }, 'no tag sent, none answered')
    const refused = await new PlantStoreClient({ baseUrl: url, token: 'not-a-valid-token-0000' }).createPlant({
      id: 7n,
      name,
    })
    if (refused.status !== 401) return t.fail(`expected 401, got ${refused.status}`)
    const body: ErrorBody = refused.body
    // @ts-expect-error -- a 401 carries an Error, not a Plant.
    const plant: Plant = refused.body
    t.match([body, plant], [{ error: 401 }, { error: 401 }])
    t.match(refused.headers.get('www-authenticate'), /^Bearer realm="plant-store"/)
  },
)

t.test('an answer outside the contract throws PlantStoreResponseError with the status', async (t) => {
  const notAllowed = await fetch(new URL('/plants', url), { method: 'GET' })
  await t.rejects(readCreatePlantResponse(notAllowed), { name: 'PlantStoreResponseError', status: 405 }, 'a 405')
  const notJson = new Response('not json', { status: 200 })
  await t.rejects(readCreatePlantResponse(notJson), PlantStoreResponseError, 'a body that is not JSON')
})

t.test('no answer: PlantStoreNetworkError with the cause', async (t) => {
  const refused = new PlantStoreClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, token: TOKEN })
  const error = await refused.createPlant({ id: 1n, name: 'Fern' }).catch((error: unknown) => error)
  t.type(error, PlantStoreNetworkError, 'connection refused')
  t.type((error as Error).cause, TypeError)

  // A partitioned proxy accepts the connection and never answers.
  const silent = await partitionProxy(t, 'http://127.0.0.1:1')
  silent.partition()
  const slow = new PlantStoreClient({ baseUrl: silent.url, token: TOKEN, timeoutMs: 200 })
  const timedOut = await slow.createPlant({ id: 1n, name: 'Fern' }).catch((error: unknown) => error)
  t.type(timedOut, PlantStoreNetworkError, 'timeoutMs passed')
  t.equal(((timedOut as Error).cause as Error).name, 'TimeoutError')

  const aborted = await client
    .createPlant({ id: 1n, name: 'Fern' }, { signal: AbortSignal.abort() })
    .catch((error: unknown) => error)
  t.type(aborted, PlantStoreNetworkError, 'signal aborted')
  t.equal(((aborted as Error).cause as Error).name, 'AbortError')
})

t.test(
  'openapi-fetch: create and replay 200 with the Plant as typed data; 409 and 400 (a string id, refused by the ' +
    'types) with a typed Error',
  async (t) => {
    const typed = createClient<paths>({
      baseUrl: url,
      bodySerializer: (body) => stringify(body)!,
      headers: { authorization: `Bearer ${TOKEN}` },
    })
    const monstera = { id: EDGE + 3n, name: 'Monstera deliciosa', tag: 'indoor' }
    for (const attempt of ['create', 'replay']) {
      const { data, error, response } = await typed.POST('/plants', { body: monstera })
      t.equal(response.status, 200, attempt)
      const plant: Plant | undefined = data
      t.same([plant, error], [{ name: monstera.name, tag: monstera.tag }, undefined])
    }
    const conflict = await typed.POST('/plants', { body: { id: monstera.id, name: 'Ficus lyrata' } })
    const body: ErrorBody | undefined = conflict.error
    t.match(
      [conflict.response.status, conflict.data, body],
      [409, undefined, { error: 409, message: /\b9007199254740995\b/ }],
      'the message names the id exactly',
    )
    // @ts-expect-error -- NewPlant.id is an int64, a bigint: the compiler rejects a string.
    const refused = await typed.POST('/plants', { body: { id: '3', name: 'Fern' } })
    t.match([refused.response.status, refused.error], [400, { error: 400, message: /body\/id/ }])
  },
)
