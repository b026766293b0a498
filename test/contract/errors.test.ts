/**
 * Contract tests of error responses: every error has the `Error` body and its
 * `error` equals the status; unknown routes are 404, other methods on `/plants` 405
 * with `Allow`; a store failure is 500 without internals (openapi.yaml,
 * info.description "Errors"; responses.InternalServerError).
 *
 * @module
 */
import t from 'tap'
import { build, dropPlantTable, freshStore, JSON_HEADERS } from '../helpers/app.js'
import { assertErrorBody, postPlant } from '../helpers/contract.js'

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
  t.equal((await postPlant(t, app, '{"id":1,"name":"Fern"}')).statusCode, 200)
  await dropPlantTable(store)
  const response = await postPlant(t, app, '{"id":2,"name":"Fern"}')
  t.equal(response.statusCode, 500)
  t.strictSame(response.json(), { error: 500, message: 'Internal Server Error' })
  t.notMatch(response.body, /plant|insert|select|sqlite|relation|at \w+ \(/i)
})

t.test('error always equals the status', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, { ...store, bodyLimit: 1024 })
  t.equal((await postPlant(t, app, '{"id":1,"name":"Fern"}')).statusCode, 200)
  const cases: Array<[number, Record<string, string>, string]> = [
    [400, JSON_HEADERS, '{"id":"1","name":"Fern"}'],
    [400, JSON_HEADERS, '{'],
    [401, { 'content-type': 'application/json' }, '{"id":1,"name":"Fern"}'],
    [409, JSON_HEADERS, '{"id":1,"name":"Moss"}'],
    [413, JSON_HEADERS, `{"id":1,"name":"${'a'.repeat(2000)}"}`],
    [415, { ...JSON_HEADERS, 'content-type': 'text/plain' }, '{"id":1,"name":"Fern"}'],
  ]
  for (const [status, headers, payload] of cases) {
    const response = await postPlant(t, app, payload, headers)
    assertErrorBody(t, response, status)
  }
})
