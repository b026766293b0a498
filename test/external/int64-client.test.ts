/**
 * client/plant-store-client.ts against a listening service, over a real socket:
 * ids at ±2^53 ± 1 and at the int64 limits are sent exactly (each a plant of its
 * own, replayed 200, conflicting 409 naming the exact id); every status of
 * `createPlant` that can be caused from outside is read into its type (200, 400,
 * 401, 409, 413, 415, 429, 431, 503); failures of the exchange throw typed errors.
 * 408 needs a request left unfinished, 500 a broken store, and 414, 501, 502, 504
 * and 505 come from a gateway: they are not caused here.
 *
 * @module
 */
import { once } from 'node:events'
import { createServer, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { type CreatePlantResult, type CreatePlantStatus, PlantStoreClient, PlantStoreNetworkError, PlantStoreResponseError, readCreatePlantResponse } from '../../client/plant-store-client.js'
import type { components, operations } from '../../service/generated/openapi.js'
import { listen, TOKEN } from '../helpers/app.js'
import { freePort } from '../helpers/machine.js'

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

const EDGE = 2n ** 53n
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
/** Neighbours that one double cannot tell apart: each must be a plant of its own. */
const IDS = [EDGE - 1n, EDGE, EDGE + 1n, -EDGE - 1n, -EDGE, -EDGE + 1n, INT64_MIN, INT64_MIN + 1n, INT64_MAX - 1n, INT64_MAX]

/** Narrows a result to `status`, failing the test otherwise. */
function expectStatus<S extends CreatePlantStatus>(t: Test, result: CreatePlantResult, status: S): Extract<CreatePlantResult, { status: S }> {
  t.equal(result.status, status, `status ${status}`)
  if (result.status !== status) throw new Error(`expected ${status}, got ${result.status}: ${JSON.stringify(result.body)}`)
  return result as Extract<CreatePlantResult, { status: S }>
}

/** Asserts an Error body: `error` equals the status, and the message matches. */
function expectError(t: Test, result: CreatePlantResult, status: Exclude<CreatePlantStatus, 200>, message: RegExp): ErrorBody {
  const body: ErrorBody = expectStatus(t, result, status).body
  t.equal(body.error, status, 'error equals the status')
  t.match(body.message, message)
  return body
}

t.test('ids beyond 2^53 and at the int64 limits: created, replayed and conflicting exactly', async (t) => {
  for (const id of IDS) {
    const plant = { id, name: `plant ${id}`, tag: 'int64' }
    const created = expectStatus(t, await client.createPlant(plant), 200)
    const body: Plant = created.body
    t.strictSame(body, { name: plant.name, tag: plant.tag }, `${id}: created (no neighbour took its place)`)
  }
  for (const id of IDS) {
    const replay = expectStatus(t, await client.createPlant({ id, name: `plant ${id}`, tag: 'int64' }), 200)
    t.strictSame(replay.body, { name: `plant ${id}`, tag: 'int64' }, `${id}: replay is 200 with the same Plant`)
    const conflict = await client.createPlant({ id, name: 'another name', tag: 'int64' })
    expectError(t, conflict, 409, new RegExp(`with id ${id} already exists`))
  }
})

t.test('400: an id outside int64 is refused by the service, naming the field', async (t) => {
  for (const id of [INT64_MAX + 1n, INT64_MIN - 1n]) {
    expectError(t, await client.createPlant({ id, name: 'out of range' }), 400, /body\/id must match format "int64"/)
  }
})

t.test('401: the body narrows to Error, with the bearer challenge', async (t) => {
  for (const anonymous of [new PlantStoreClient({ baseUrl: url }), new PlantStoreClient({ baseUrl: url, token: 'not-a-valid-token-0000' })]) {
    const result = await anonymous.createPlant({ id: 7n, name: 'Fern' })
    if (result.status === 401) {
      const body: ErrorBody = result.body
      // @ts-expect-error -- a 401 carries an Error, not a Plant.
      const plant: Plant = result.body
      void plant
      t.equal(body.error, 401)
      t.match(result.headers.get('www-authenticate'), /^Bearer realm="plant-store"/)
    } else t.fail(`expected 401, got ${result.status}`)
  }
})

t.test('200: the body narrows to Plant; a base URL with a trailing slash works alike', async (t) => {
  const slashed = new PlantStoreClient({ baseUrl: new URL(`${url}/`), token: TOKEN })
  const result = await slashed.createPlant({ id: 8n, name: 'Monstera deliciosa' })
  if (result.status === 200) {
    const name: string = result.body.name
    // @ts-expect-error -- a Plant has no message.
    void result.body.message
    t.equal(name, 'Monstera deliciosa')
    t.notOk('tag' in result.body, 'no tag sent, none answered')
  } else t.fail(`expected 200, got ${result.status}`)
})

t.test('413: a body over the limit', async (t) => {
  expectError(t, await client.createPlant({ id: 9n, name: 'x'.repeat(70_000) }), 413, /too large/i)
})

t.test('415 and 431, from requests the client does not send, read by readCreatePlantResponse', async (t) => {
  const plants = new URL('/plants', url)
  const textPlain = await fetch(plants, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' }, body: '{"id":1,"name":"x"}' })
  expectError(t, await readCreatePlantResponse(textPlain), 415, /application\/json/)
  const hugeHeaders = await fetch(plants, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'x-padding': 'a'.repeat(20_000) }, body: '{}' })
  expectError(t, await readCreatePlantResponse(hugeHeaders), 431, /Header Fields Too Large/)
})

t.test('503 when the store is unreachable, then 429 past the rate limit, both with Retry-After', async (t) => {
  const degraded = await listen(t, {
    databaseUrl: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
    migrateOnStart: false,
    databaseConnectTimeoutMs: 1000,
    rateLimitMax: 1,
  })
  const limited = new PlantStoreClient({ baseUrl: degraded.url, token: TOKEN })
  const unavailable = await limited.createPlant({ id: EDGE + 1n, name: 'Fern' })
  expectError(t, unavailable, 503, /store is unavailable/)
  t.match(unavailable.headers.get('retry-after'), /^\d+$/)
  const refused = await limited.createPlant({ id: EDGE + 1n, name: 'Fern' })
  expectError(t, refused, 429, /Rate limit exceeded/)
  t.match(refused.headers.get('retry-after'), /^\d+$/)
})

t.test('an answer outside the contract throws PlantStoreResponseError with the status', async (t) => {
  const notAllowed = await fetch(new URL('/plants', url), { method: 'GET' })
  await t.rejects(readCreatePlantResponse(notAllowed), { name: 'PlantStoreResponseError', status: 405 }, '405 is not declared for createPlant')
  await t.rejects(readCreatePlantResponse(new Response('not json', { status: 200 })), PlantStoreResponseError, 'a body that is not JSON')
})

t.test('no answer: PlantStoreNetworkError with the cause', async (t) => {
  const refused = new PlantStoreClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, token: TOKEN })
  const error = await refused.createPlant({ id: 1n, name: 'Fern' }).catch((error: unknown) => error)
  t.type(error, PlantStoreNetworkError, 'connection refused')
  t.type((error as Error).cause, TypeError)

  // A server that accepts the connection and never answers.
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => void sockets.add(socket)).listen(0, '127.0.0.1')
  await once(silent, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    silent.close()
  })
  const { port } = silent.address() as { port: number }
  const slow = new PlantStoreClient({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN, timeoutMs: 200 })
  const timedOut = await slow.createPlant({ id: 1n, name: 'Fern' }).catch((error: unknown) => error)
  t.type(timedOut, PlantStoreNetworkError, 'timeoutMs passed')
  t.equal(((timedOut as Error).cause as Error).name, 'TimeoutError')

  const aborted = await client.createPlant({ id: 1n, name: 'Fern' }, { signal: AbortSignal.abort() }).catch((error: unknown) => error)
  t.type(aborted, PlantStoreNetworkError, 'signal aborted')
  t.equal(((aborted as Error).cause as Error).name, 'AbortError')
})
