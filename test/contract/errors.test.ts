/**
 * Contract tests of error responses: every error has the `Error` body and its
 * `error` equals the status; unknown routes are 404, other methods on `/plants` 405
 * with `Allow`; a store failure is 500 without internals (openapi.yaml,
 * info.description "Errors"; responses.InternalServerError).
 *
 * @module
 */
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { loadContract } from '../../service/contract.js'
import { build, contractViolations, dropPlantTable, freshStore, JSON_HEADERS } from '../helpers/app.js'

/** The contract's `Error` schema, for responses outside `POST /plants` (404, 405). */
const errorSchema = (loadContract().components as { schemas: { Error: object } }).schemas.Error
const isErrorBody = new Ajv2020({ strict: false }).addFormat('int32', true).compile(errorSchema)

/** Checks that a response has the `Error` body with `error` equal to its status. */
function assertErrorBody(t: Test, response: LightMyRequestResponse, status: number): void {
  t.equal(response.statusCode, status)
  t.match(response.headers['content-type'], /^application\/json/)
  const body: unknown = response.json()
  t.ok(isErrorBody(body), `the Error schema: ${JSON.stringify(isErrorBody.errors)}`)
  t.equal((body as { error: unknown }).error, status, 'error equals the status')
}

/** POSTs to /plants and checks the response against the contract. */
async function create(t: Test, app: FastifyInstance, headers: Record<string, string>, payload: string) {
  const response = await app.inject({ method: 'POST', url: '/plants', headers, payload })
  t.same(contractViolations(response), [], `${response.statusCode} conforms to the contract`)
  return response
}

t.test('an unknown route is 404 with the Error body', async (t) => {
  const app = await build(t)
  for (const [method, url] of [
    ['GET', '/'],
    ['GET', '/plants/1'],
    ['POST', '/plant'],
    ['DELETE', '/nowhere?x=1'],
  ] as const) {
    const response = await app.inject({ method, url, headers: JSON_HEADERS, payload: method === 'GET' ? undefined : '{}' })
    assertErrorBody(t, response, 404)
  }
})

for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const) {
  t.test(`${method} /plants is 405 with the Error body and Allow: POST`, async (t) => {
    const app = await build(t)
    const payload = method === 'GET' ? undefined : '{"id":1,"name":"Fern"}'
    const response = await app.inject({ method, url: '/plants', headers: JSON_HEADERS, payload })
    assertErrorBody(t, response, 405)
    t.equal(response.headers.allow, 'POST')
  })
}

t.test('HEAD /plants is 405 with Allow: POST', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'HEAD', url: '/plants' })
  t.equal(response.statusCode, 405)
  t.equal(response.headers.allow, 'POST')
})

t.test('a store failure is 500 with a fixed message: no stack, no SQL', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, store)
  t.equal((await create(t, app, JSON_HEADERS, '{"id":1,"name":"Fern"}')).statusCode, 200)
  await dropPlantTable(store)
  const response = await create(t, app, JSON_HEADERS, '{"id":2,"name":"Fern"}')
  t.equal(response.statusCode, 500)
  t.strictSame(response.json(), { error: 500, message: 'Internal Server Error' })
  t.notMatch(response.body, /plant|insert|select|sqlite|relation|at \w+ \(/i)
})

t.test('error always equals the status', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, { ...store, bodyLimit: 1024 })
  t.equal((await create(t, app, JSON_HEADERS, '{"id":1,"name":"Fern"}')).statusCode, 200)
  const cases: Array<[number, Record<string, string>, string]> = [
    [400, JSON_HEADERS, '{"id":"1","name":"Fern"}'],
    [400, JSON_HEADERS, '{'],
    [401, { 'content-type': 'application/json' }, '{"id":1,"name":"Fern"}'],
    [409, JSON_HEADERS, '{"id":1,"name":"Moss"}'],
    [413, JSON_HEADERS, `{"id":1,"name":"${'a'.repeat(2000)}"}`],
    [415, { ...JSON_HEADERS, 'content-type': 'text/plain' }, '{"id":1,"name":"Fern"}'],
  ]
  for (const [status, headers, payload] of cases) {
    const response = await create(t, app, headers, payload)
    assertErrorBody(t, response, status)
  }
})
