/** The example gateway before a recording server: what nginx answers itself and what it sends a replica. */
import { once } from 'node:events'
import { cpSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingMessage } from 'node:http'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { TOKEN } from '../helpers/app.ts'
import { run } from '../helpers/command.ts'
import {
  authorized,
  errorBody,
  GATEWAY_PREFIX,
  get,
  NGINX,
  NGINX_DIR,
  PLANTS,
  post,
  selfSignedCertificate,
  send,
  startGateway,
} from '../helpers/nginx.ts'
import { partitionProxy } from '../helpers/partition-proxy.ts'
import { connected, exchange, headerLines, parse, requestHead } from '../helpers/raw-http.ts'

const AUTHORIZED = authorized(TOKEN)

const seen: IncomingMessage[] = []
/** A replica that records each request and answers 200 with a Plant. */
const recorder = createHttpServer((incoming, response) => {
  seen.push(incoming)
  incoming
    .resume()
    .on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"name":"Fern"}'))
})
await once(recorder.listen(0, '127.0.0.1'), 'listening')
t.teardown(() => new Promise((resolve) => recorder.close(resolve).closeAllConnections()))
const gateway = await startGateway(t, [`127.0.0.1:${(recorder.address() as { port: number }).port}`])

const fern = (id: number) => post(`{"id":${id},"name":"Fern"}`, AUTHORIZED)
const EMPTY = 'Content-Length: 2\r\n\r\n{}'
const head = requestHead('POST', PLANTS, AUTHORIZED)

/** Requests nginx answers itself, with the status. */
const gatewayAnswers: Array<[string, string, number]> = [
  ['a malformed request line', 'GARBAGE\r\n\r\n', 400],
  ['no Host header', `POST ${PLANTS} HTTP/1.1\r\n${headerLines(AUTHORIZED)}${EMPTY}`, 400],
  ['two Host headers', `POST ${PLANTS} HTTP/1.1\r\nHost: a\r\nHost: b\r\n${headerLines(AUTHORIZED)}${EMPTY}`, 400],
  [
    'Content-Length with Transfer-Encoding',
    `${head}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
    400,
  ],
  ['two Content-Lengths', `${head}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, 400],
  ['an invalid chunk size', `${head}Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n`, 400],
  ['a malformed percent-encoding', `${requestHead('POST', `${PLANTS}%zz`, AUTHORIZED)}${EMPTY}`, 400],
  ['an unknown Transfer-Encoding', `${head}Transfer-Encoding: gzip\r\n\r\n{}`, 501],
  ['a request target over 8 KiB', post('{}', AUTHORIZED, `${PLANTS}?${'q'.repeat(8200)}`), 414],
  ['a header line over 8 KiB', post('{}', { ...AUTHORIZED, 'X-Big': 'b'.repeat(8200) }), 431],
  [
    'headers over 16 KiB',
    post('{}', { ...AUTHORIZED, 'X-A': 'a'.repeat(6000), 'X-B': 'b'.repeat(6000), 'X-C': 'c'.repeat(6000) }),
    431,
  ],
  ['HTTP/2.0 in an HTTP/1 request line', `POST ${PLANTS} HTTP/2.0\r\nHost: localhost\r\n\r\n`, 505],
  // nginx refuses TRACE everywhere, so no Allow to give.
  ['TRACE', `TRACE ${PLANTS} HTTP/1.1\r\nHost: localhost\r\n\r\n`, 501],
  // Outside /plants and /docs under the prefix.
  ...[
    '/',
    '/plants',
    '/metrics',
    '/.plant-store-errors/502',
    ...['', '/', '/metrics', '/health/ready', '/../metrics', '/%2e%2e/metrics'].map((path) => GATEWAY_PREFIX + path),
  ].map((path): [string, string, number] => [`GET ${path}`, get(path), 404]),
]

t.test('what the gateway answers itself: the status, the Error body, no-store, nothing forwarded', async (t) => {
  for (const [what, raw, status] of gatewayAnswers) {
    const before = seen.length
    const response = await send(gateway, raw)
    errorBody(t, response, status, raw.startsWith(`POST ${PLANTS} `) ? what : undefined)
    t.equal(response.headers['cache-control'], 'no-store', `${what}: not cached`)
    t.equal(response.headers.allow, undefined, `${what}: no Allow`)
    t.equal((await gateway.accessEntry(response)).upstream, '', `${what}: not forwarded`)
    t.equal(seen.length, before, `${what}: replica saw nothing`)
  }
  const plain = await exchange({ url: gateway.origin.replace('https:', 'http:') }, fern(300))
  errorBody(t, plain, 400, 'plain HTTP to the TLS port')
})

t.test(
  "every path below the prefix's /plants is passed on without the prefix (an operation added there needs no change)",
  async (t) => {
    for (const path of [`${PLANTS}/9007199254740993`, `${PLANTS}/1/revisions?from=2`, `${PLANTS}-not-in-the-api`]) {
      t.equal((await send(gateway, get(path))).statusCode, 200, path)
      t.equal(seen.at(-1)?.url, path.slice(GATEWAY_PREFIX.length), 'without the prefix')
    }
  },
)

t.test('a replica that does not answer: 504 with the Error body after the gateway’s read timeout', async (t) => {
  const stalled = await partitionProxy(t, 'http://127.0.0.1:1') // partitioned: it accepts and never answers
  stalled.partition()
  const response = await send(await startGateway(t, [stalled]), fern(600))
  errorBody(t, response, 504, '504')
})

t.test(
  'what the gateway sends a replica: the client address set (not appended), https, the host, its request id, the ' +
    "client's traceparent, HTTP/1.1 kept alive",
  async (t) => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    const spoofed = {
      ...AUTHORIZED,
      ...{ 'X-Forwarded-For': '203.0.113.7', 'X-Forwarded-Proto': 'http', 'X-Forwarded-Host': 'evil.example' },
      ...{ Forwarded: 'for=203.0.113.7', 'X-Request-Id': 'chosen-by-client', traceparent },
    }
    const response = await send(gateway, post('{"id":700,"name":"Fern"}', spoofed), '127.0.0.2')
    t.equal(response.statusCode, 200)
    const { httpVersion, headers, url } = seen.at(-1)!
    t.same([url, httpVersion, headers.connection], ['/plants', '1.1', undefined], 'no prefix; HTTP/1.1 kept alive')
    const forwarded = ['forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'].map((h) => headers[h])
    t.same(forwarded, [undefined, '127.0.0.2', 'https', 'localhost'], 'no Forwarded')
    t.equal(headers['x-request-id'], response.headers['x-request-id'], 'its request id')
    t.equal(headers.traceparent, traceparent, 'traceparent kept')
    t.equal(headers.authorization, `Bearer ${TOKEN}`, 'credentials kept')
    t.equal((await gateway.accessEntry(response)).client, '127.0.0.2', 'logged address')
  },
)

t.test('the shipped configuration passes nginx -t (with a certificate where listen.conf names it)', async (t) => {
  const dir = t.testdir({ tls: {} })
  cpSync(NGINX_DIR, dir, { recursive: true })
  await selfSignedCertificate(join(dir, 'tls', 'fullchain.pem'), join(dir, 'tls', 'privkey.pem'))
  t.match((await run(NGINX, ['-t', '-c', join(dir, 'nginx.conf'), '-p', `${dir}/`])).stderr, /test is successful/)
})

/** Sends `head` with `Expect: 100-continue` from `localAddress`. @returns the first bytes back. */
async function expectContinue(t: Test, localAddress: string, head: string) {
  const socket = await connected({ url: gateway.origin, ca: gateway.ca, localAddress }, t)
  const answered = once(socket, 'data')
  socket.write(`${head}Expect: 100-continue\r\n\r\n`)
  return String((await answered)[0])
}

t.test(
  'per client address, past 100 requests in progress: 429 with Retry-After, no-store and the Error body; other ' +
    'addresses are served',
  async (t) => {
    for (let i = 0; i < 100; i++) {
      // 100 Continue comes after the limits counted the request.
      const answer = await expectContinue(t, '127.0.0.3', `${head}Content-Length: 10\r\n`)
      if (!/^HTTP\/1\.1 100 /.test(answer)) t.fail(`connection ${i}: no 100 Continue`)
    }
    const refused = await send(gateway, fern(800), '127.0.0.3')
    errorBody(t, refused, 429, '429')
    t.match(refused.headers, { 'retry-after': '1', 'cache-control': 'no-store' })
    t.equal((await gateway.accessEntry(refused)).upstream, '', 'nothing forwarded')
    t.equal((await send(gateway, fern(801), '127.0.0.5')).statusCode, 200, 'another address is served')
  },
)

t.test('per client address, past a burst of 200 requests: 429 with Retry-After and the Error body', async (t) => {
  // Pipelined, so they arrive together.
  const count = 1000
  const socket = await connected({ url: gateway.origin, ca: gateway.ca, localAddress: '127.0.0.4' }, t)
  let received = ''
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
  const closed = once(socket, 'close')
  // The limits apply to forwarded routes only.
  const request = (last: boolean) =>
    `GET ${GATEWAY_PREFIX}/docs/ HTTP/1.1\r\nHost: localhost\r\n${last ? 'Connection: close\r\n' : ''}\r\n`
  socket.write(Array.from({ length: count }, (_, i) => request(i === count - 1)).join(''))
  await closed
  const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
  t.equal(statuses.length, count, 'every request answered')
  t.same(statuses.slice(0, 201), Array<number>(201).fill(200), 'the burst is served')
  // How many more are served depends on speed (100/s refill).
  const limited = statuses.filter((status) => status === 429).length
  t.ok(
    limited > 0 && statuses.every((status) => status === 200 || status === 429),
    `the rest refused but refills: ${limited}`,
  )
  const first429 = parse(Buffer.from(received.slice(received.indexOf('HTTP/1.1 429 ')), 'latin1'), true)!
  errorBody(t, { ...first429, elapsedMs: 0 }, 429)
  t.equal(first429.headers['retry-after'], '1')
})

t.test("the service's responses keep their own headers; the access log has no query", async (t) => {
  const created = await send(gateway, post('{"id":900,"name":"Fern"}', AUTHORIZED, `${PLANTS}?access_token=${TOKEN}`))
  t.equal(created.statusCode, 200, 'recorder')
  const added = Object.keys(created.headers).filter((name) => ['cache-control', 'retry-after'].includes(name))
  t.same(added, [], 'nothing added')
  t.equal((await gateway.accessEntry(created)).uri, PLANTS, 'no query')
  t.notMatch(JSON.stringify(gateway.accessLog()), TOKEN, 'no token')
})

t.test(
  'Expect: 100-continue is answered by nginx before any token is checked, for a body up to 64 KiB only',
  async (t) => {
    const unauthenticated = requestHead('POST', PLANTS, { 'Content-Type': 'application/json' })
    const answer = await expectContinue(t, '127.0.0.6', `${unauthenticated}Content-Length: 65536\r\n`)
    t.match(answer, /^HTTP\/1\.1 100 /, 'no token: 100 all the same')
    const tooLarge = await send(gateway, `${unauthenticated}Content-Length: 65537\r\nExpect: 100-continue\r\n\r\n`)
    errorBody(t, tooLarge, 413) // not a 100 first
  },
)
