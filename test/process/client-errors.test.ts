/** Requests rejected before any route runs (HTTP parser, its timeouts, router): the Error body, and logged. */
import { once } from 'node:events'
import type { Socket } from 'node:net'
import t, { type Test } from 'tap'
import { JSON_HEADERS, listen, logSink } from '../helpers/app.ts'
import { assertErrorBody, contractViolations } from '../helpers/contract.ts'
import {
  connected,
  exchange,
  gather,
  headerLines,
  open,
  type RawResponse,
  requestHead,
  wholeRequest,
} from '../helpers/raw-http.ts'

const { logger, lines } = logSink()
const { app, url } = await listen(t, {}, logger)

/** `status` with the Error body, and its request id in the rejection's log line. */
function rejected(t: Test, response: RawResponse, status: number, logs: Array<Record<string, unknown>>) {
  assertErrorBody(t, response, status)
  const requestId = response.headers['x-request-id']
  t.ok(requestId)
  const logged = logs.some(
    (line) =>
      line.requestId === requestId &&
      line.msg === 'request rejected' &&
      (line.statusCode ?? (line.res as { statusCode?: number } | undefined)?.statusCode) === status,
  )
  t.ok(logged, 'logged with the request id')
}

const POST = requestHead('POST', '/plants', JSON_HEADERS)

/** What llhttp refuses, and the status if not 400. */
const parserErrors: Array<[string, string, number?]> = [
  ['a malformed request line', 'GARBAGE\r\n\r\n'],
  ['a request line with a method no HTTP specification defines', 'BREW /plants HTTP/1.1\r\nHost: localhost\r\n\r\n'],
  [
    'CONNECT (no 5xx for client input, no silent close)',
    'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
  ],
  ['an unknown HTTP version', 'POST /plants HTTP/9.9\r\nHost: localhost\r\n\r\n'],
  ['a header name with a space', `${POST}Bad Header: y\r\nContent-Length: 2\r\n\r\n{}`],
  ['a control character in a header value', `${POST}X-Note: a\x01b\r\nContent-Length: 2\r\n\r\n{}`],
  ['an invalid Content-Length', `${POST}Content-Length: 2x\r\n\r\n{}`],
  ['two different Content-Lengths', `${POST}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`],
  [
    'Content-Length with Transfer-Encoding (RFC 9112 §6.3: request smuggling)',
    `${POST}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
  ],
  ['an unknown Transfer-Encoding', `${POST}Transfer-Encoding: gzip\r\n\r\n{}`],
  ['an invalid chunk size', `${POST}Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n`],
  ['headers over 16 KiB', `${POST}X-Big: ${'a'.repeat(17_000)}\r\nContent-Length: 2\r\n\r\n{}`, 431],
  [
    'chunk extensions over 16 KiB',
    `${POST}Transfer-Encoding: chunked\r\n\r\n2;${'a'.repeat(17_000)}\r\n{}\r\n0\r\n\r\n`,
    413,
  ],
]

t.test('what the HTTP parser refuses is answered with the Error body and the connection closed', async (t) => {
  for (const [what, request, status = 400] of parserErrors) {
    const response = await exchange({ url }, request)
    t.equal(response.statusCode, status, what)
    rejected(t, response, status, lines)
    t.equal(response.headers.connection, 'close')
    if (request.startsWith('POST /plants HTTP/1.1'))
      t.same(contractViolations(response), [], 'declared for POST /plants')
  }
})

t.test(
  'headers not complete within HEADERS_TIMEOUT_MS, or a body within REQUEST_TIMEOUT_MS: 408 with the Error body, ' +
    'not before',
  async (t) => {
    const { logger, lines } = logSink()
    const { url } = await listen(t, { headersTimeoutMs: 300, requestTimeoutMs: 600 }, logger)
    for (const [request, timeoutMs] of [
      [`${POST}Content-Length: 2\r\n`, 300],
      [`${POST}Content-Length: 20\r\n\r\n{"id":1,`, 600],
    ] as const) {
      const response = await exchange({ url }, request)
      rejected(t, response, 408, lines)
      t.same(contractViolations(response), [])
      t.ok(response.elapsedMs >= timeoutMs, `not before the timeout (${response.elapsedMs} ms)`)
    }
  },
)

t.test(
  'a request cut short (the client ends its side amid the headers) is answered 400 with the Error body',
  async (t) => {
    const socket = await connected({ url })
    socket.end(POST)
    const [head, body] = (await gather(socket)).received.split('\r\n\r\n')
    t.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/)
    t.strictSame(JSON.parse(body!), { error: 400, message: 'Bad Request: the request is not valid HTTP/1.1' })
    const logged = lines.some(
      (l) => l.msg === 'request rejected' && l.statusCode === 400 && l.code === 'HPE_INVALID_EOF_STATE',
    )
    t.ok(logged, 'the cause is logged')
  },
)

t.test(
  'an HTTP/1.1 request without Host is 400 with the Error body (RFC 9112 §3.2); HTTP/1.0 needs none',
  async (t) => {
    const body = '{"id":1,"name":"Fern"}'
    const headers = `${headerLines({ ...JSON_HEADERS, 'Content-Length': `${body.length}`, Connection: 'close' })}\r\n`
    const response = await exchange({ url }, `POST /plants HTTP/1.1\r\n${headers}${body}`)
    rejected(t, response, 400, lines)
    t.match(JSON.parse(response.body), { message: /Host/ })
    t.same(contractViolations(response), [])
    t.equal((await exchange({ url }, `POST /plants HTTP/1.0\r\n${headers}${body}`)).statusCode, 200)
  },
)

t.test('a malformed percent-encoding in the path (FST_ERR_BAD_URL) is 400 with the Error body', async (t) => {
  for (const path of ['/plants%zz', '/docs/%C0', '/%'])
    rejected(t, await exchange({ url }, wholeRequest('GET', path)), 400, lines)
})

t.test('an expectation other than 100-continue is ignored, as the gateway does (RFC 9110 §10.1.1)', async (t) => {
  const response = await exchange(
    { url },
    wholeRequest('POST', '/plants', { ...JSON_HEADERS, Expect: 'a-miracle' }, '{"id":2,"name":"Fern"}'),
  )
  t.equal(response.statusCode, 200)
  t.strictSame(JSON.parse(response.body), { name: 'Fern' })
})

t.test('a client that resets its connection amid the headers gets nothing, and nothing is logged', async (t) => {
  const reported = once(app.server, 'clientError') as Promise<[NodeJS.ErrnoException]>
  const before = lines.length
  const socket = await connected({ url })
  socket.write(POST)
  socket.resetAndDestroy()
  const [error] = await reported
  t.equal(error.code, 'ECONNRESET')
  const after = await exchange({ url }, wholeRequest('GET', '/health/live'))
  t.equal(after.statusCode, 200, 'the service still serves')
  const logged = lines.slice(before).filter(({ msg }) => msg === 'request rejected' || msg === 'connection failed')
  t.same(logged, [], 'no rejection logged')
})

t.test(
  'a request pipelined after a valid one and refused by the parser: the earlier answer first, then the Error body, ' +
    'then the close',
  async (t) => {
    const body = '{"id":31,"name":"Fern"}'
    const create = `${POST}Content-Length: ${body.length}\r\n\r\n${body}`
    const refused: Array<[string, string, number]> = [
      ['a TLS handshake', '\x16\x03\x01garbage\r\n\r\n', 400],
      ['headers over 16 KiB', `GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ]
    for (const [what, after, status] of refused) {
      for (const [first, answer] of [
        [create, /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{"name":"Fern"\}HTTP\/1\.1 /],
        ['GET /docs/json HTTP/1.1\r\nHost: localhost\r\n\r\n', /^HTTP\/1\.1 200 OK\r\n[^]*"openapi":[^]*\}HTTP\/1\.1 /],
      ] as const) {
        const socket = await connected({ url })
        socket.write(first + after)
        const { received: text } = await gather(socket)
        t.match(text, answer, `${what}: the earlier request's answer first`)
        const rest = text.slice(text.lastIndexOf('HTTP/1.1 '))
        t.match(rest, new RegExp(`^HTTP/1\\.1 ${status} [^]*\\r\\nconnection: close\\r\\n`), `${what}: then ${status}`)
        t.equal(JSON.parse(rest.slice(rest.indexOf('\r\n\r\n') + 4)).error, status, `${what}: its Error body`)
      }
    }
    const stored = await exchange({ url }, wholeRequest('POST', '/plants', JSON_HEADERS, '{"id":31,"name":"Ivy"}'))
    t.equal(stored.statusCode, 409, 'the create answered 200 is stored')
  },
)

t.test('an unexpected connection error is answered 500 and logged as a failure, with its cause', async (t) => {
  const accepted = once(app.server, 'connection') as Promise<[Socket]>
  const client = open({ url })
  const [server] = await accepted
  const received = gather(client)
  app.server.emit('clientError', Object.assign(new Error('something odd'), { code: 'ESOMETHING' }), server)
  const { received: text } = await received
  t.match(text, /^HTTP\/1\.1 500 Internal Server Error\r\n/)
  t.match(text, /\r\n\r\n\{"error":500,"message":"Internal Server Error"\}$/)
  const failures = lines.filter((line) => line.msg === 'connection failed')
  t.match(
    failures,
    [{ level: 50, err: { message: 'something odd', code: 'ESOMETHING' } }],
    'logged once, as an error, with the cause',
  )
})
