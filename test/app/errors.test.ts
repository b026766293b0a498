/**
 * Contract tests of error responses: every error has the `Error` body and its
 * `error` equals the status; unknown routes are 404, other methods on a path of the
 * contract 405 with `Allow`; a store failure is 500 without internals (openapi.yaml,
 * info.description "Errors"; responses.InternalServerError).
 *
 * @module
 */
import { METHODS } from 'node:http'
import t from 'tap'
import { build, dropPlantTable, freshStore, JSON_HEADERS, listen, TOKEN } from '../helpers/app.js'
import { allowedMethods, assertErrorBody, examplePath, OPERATIONS, pathTemplateOf } from '../helpers/contract.js'
import { postPlant } from '../helpers/post-plant.js'
import { exchange } from '../helpers/raw-http.js'

t.test('an unknown route is 404 with the Error body', async (t) => {
  const app = await build(t)
  for (const [method, url] of [
    ['GET', '/'],
    ['GET', '/plants/1/nothing'],
    ['POST', '/plant'],
    ['DELETE', '/nowhere?x=1'],
  ] as const) {
    t.equal(pathTemplateOf(url), undefined, `${url} is no path of the contract`)
    const response = await app.inject({ method, url, headers: JSON_HEADERS, payload: method === 'GET' ? undefined : '{}' })
    assertErrorBody(t, response, 404)
  }
})

// Every method Node's parser accepts but CONNECT (a tunnel: 400), on every path of the
// contract, whatever the body or its media type; HEAD (no body to read back) below.
t.test('every method a path of the contract has no operation for is 405 with Allow and the Error body, before any body is read (RFC 9110 §15.5.6)', async (t) => {
  const { url } = await listen(t)
  t.ok(METHODS.includes('TRACE') && METHODS.includes('QUERY') && METHODS.includes('PROPFIND'))
  for (const path of new Set(OPERATIONS.map((operation) => operation.path))) {
    const allow = allowedMethods(path).join(', ')
    for (const method of METHODS.filter((method) => !['CONNECT', 'HEAD', ...allowedMethods(path)].includes(method))) {
      for (const body of ['', 'Content-Type: text/plain\r\nContent-Length: 4\r\n\r\nnope']) {
        const response = await exchange({ url }, `${method} ${examplePath(path)} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n${body || '\r\n'}`)
        t.equal(response.statusCode, 405, `${method} ${path}${body ? ' with a text body' : ''}`)
        t.equal(response.headers.allow, allow)
        t.strictSame(JSON.parse(response.body), { error: 405, message: `Method not allowed; ${path} allows ${allow}` })
      }
    }
  }
})

t.test('HEAD is 405 with Allow where a path has no GET', async (t) => {
  const app = await build(t)
  for (const path of new Set(OPERATIONS.map((operation) => operation.path))) {
    if (allowedMethods(path).includes('HEAD')) continue
    const response = await app.inject({ method: 'HEAD', url: examplePath(path) })
    t.equal(response.statusCode, 405, path)
    t.equal(response.headers.allow, allowedMethods(path).join(', '))
  }
})

t.test('a method no HTTP specification defines is 400 with the Error body, not a 5xx', async (t) => {
  const { url } = await listen(t)
  for (const method of ['FOO', 'BREW']) {
    const response = await exchange({ url }, `${method} /plants HTTP/1.1\r\nHost: localhost\r\n\r\n`)
    t.equal(response.statusCode, 400, method)
    t.strictSame(JSON.parse(response.body), { error: 400, message: 'Bad Request: the request method is not one the service knows' })
  }
})

t.test('a store failure is 500 with a fixed message: no stack, no SQL', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, store)
  t.equal((await postPlant(app, '{"id":1,"name":"Fern"}', { t })).statusCode, 200)
  await dropPlantTable(store)
  const response = await postPlant(app, '{"id":2,"name":"Fern"}', { t })
  t.equal(response.statusCode, 500)
  t.strictSame(response.json(), { error: 500, message: 'Internal Server Error' })
  t.notMatch(response.body, /plant|insert|select|sqlite|relation|at \w+ \(/i)
})

t.test('error always equals the status', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, { ...store, bodyLimit: 1024 })
  t.equal((await postPlant(app, '{"id":1,"name":"Fern"}', { t })).statusCode, 200)
  const cases: Array<[number, Record<string, string>, string]> = [
    [400, JSON_HEADERS, '{"id":"1","name":"Fern"}'],
    [400, JSON_HEADERS, '{'],
    [401, { 'content-type': 'application/json' }, '{"id":1,"name":"Fern"}'],
    [409, JSON_HEADERS, '{"id":1,"name":"Moss"}'],
    [413, JSON_HEADERS, `{"id":1,"name":"${'a'.repeat(2000)}"}`],
    [415, { ...JSON_HEADERS, 'content-type': 'text/plain' }, '{"id":1,"name":"Fern"}'],
  ]
  for (const [status, headers, payload] of cases) {
    const response = await postPlant(app, payload, { t, headers })
    assertErrorBody(t, response, status)
  }
})
