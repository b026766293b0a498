/** Unknown routes 404; other methods on a path of the contract 405 with `Allow`. */
import { METHODS } from 'node:http'
import t from 'tap'
import { JSON_HEADERS, listen, TOKEN } from '../helpers/app.ts'
import { allowedMethods, assertErrorBody, examplePath, OPERATIONS } from '../helpers/contract.ts'
import { exchange } from '../helpers/raw-http.ts'

const { app, url } = await listen(t)
const paths = new Set(OPERATIONS.map((operation) => operation.path))

t.test('an unknown route is 404 with the Error body', async (t) => {
  for (const [method, url] of [
    ['GET', '/'],
    ['GET', '/plants/1/nothing'],
    ['POST', '/plant'],
    ['DELETE', '/nowhere?x=1'],
  ] as const)
    assertErrorBody(t, await app.inject({ method, url, headers: JSON_HEADERS, payload: '{}' }), 404)
})

// Every method Node's parser accepts but CONNECT (a tunnel: 400); HEAD where a path has no GET.
t.test(
  'every method a path of the contract has no operation for is 405 with Allow and the Error body, before any body',
  async (t) => {
    t.ok(METHODS.includes('TRACE') && METHODS.includes('QUERY') && METHODS.includes('PROPFIND'))
    for (const path of paths) {
      const allow = allowedMethods(path).join(', ')
      for (const method of METHODS.filter((method) => !['CONNECT', 'HEAD', ...allowedMethods(path)].includes(method))) {
        for (const body of ['', 'Content-Type: text/plain\r\nContent-Length: 4\r\n\r\nnope']) {
          const response = await exchange(
            { url },
            `${method} ${examplePath(path)} HTTP/1.1\r\nHost: localhost\r\n` +
              `Authorization: Bearer ${TOKEN}\r\nConnection: close\r\n${body || '\r\n'}`,
          )
          t.match(response, { statusCode: 405, headers: { allow } }, `${method} ${path}${body && ' with a body'}`)
          t.strictSame(JSON.parse(response.body), {
            error: 405,
            message: `Method not allowed; ${path} allows ${allow}`,
          })
        }
      }
      if (allowedMethods(path).includes('HEAD')) continue
      const head = await app.inject({ method: 'HEAD', url: examplePath(path) })
      t.match(head, { statusCode: 405, headers: { allow } }, `HEAD ${path}`)
    }
  },
)
