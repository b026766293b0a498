/**
 * One client against the others (OWASP API2:2023 and API4:2023): address budgets
 * that a client cannot multiply, forge or flush, credentials kept out of URLs and
 * logs, a bounded number of connections, and error answers that are never cached.
 */
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { loggerOptions } from '../../service/logging.js'
import { build, JSON_HEADERS, listen, logSink, TOKEN } from '../helpers/app.js'
import { assertErrorBody, contractViolations, otherMethod } from '../helpers/contract.js'
import { postPlant } from '../helpers/post-plant.js'
import { exchange, requestHead } from '../helpers/raw-http.js'

const WRONG = 'wrong-token-0123456789abcdefghijklmnop'

/** A create on `app` from `address` (the socket's) with a wrong token, and `forwardedFor` when given. */
const failure = (app: FastifyInstance, address: string, forwardedFor?: string) =>
  postPlant(app, { id: 1, name: 'Ficus' }, { from: address, headers: { 'content-type': 'application/json', authorization: `Bearer ${WRONG}`, 'x-forwarded-for': forwardedFor } })

t.test('IPv6 clients share a failure budget per /56 network, not per /64', async (t) => {
  const app = await build(t, { authFailureLimitMax: 1 })
  t.equal((await failure(app, '2001:db8:0:1::1')).statusCode, 401)
  t.equal((await failure(app, '2001:db8:0:2::1')).statusCode, 429, 'another /64 of the same /56 shares the budget')
  t.equal((await failure(app, '2001:db8:0:ff:ffff::1')).statusCode, 429, 'the last /64 of that /56 too')
  t.equal((await failure(app, '2001:db8:0:100::1')).statusCode, 401, 'the next /56 has its own')
})

t.test('a flood of new addresses does not reset the count of a known offender', async (t) => {
  const app = await build(t, { authFailureLimitMax: 3 })
  const attacker = '198.51.100.66'
  t.equal((await failure(app, attacker)).statusCode, 401)
  t.equal((await failure(app, attacker)).statusCode, 401)
  // More new addresses than the store keeps of them (5,000), one failure each.
  for (let batch = 0; batch < 60; batch++) {
    const flood = Array.from({ length: 100 }, (_, i) => failure(app, `10.${batch}.${i >> 8}.${i & 255}`))
    for (const response of await Promise.all(flood)) if (response.statusCode !== 401) t.fail(`a flood request got ${response.statusCode}`)
  }
  t.equal((await failure(app, attacker)).statusCode, 401, 'the third failure is still counted as the third')
  t.equal((await failure(app, attacker)).statusCode, 429, 'and the fourth is past the budget')
})

t.test('behind a trusted gateway, a forwarded address that is not an IP address counts as the gateway', async (t) => {
  const gateway = '10.0.0.2'
  const { stream, lines } = logSink()
  const app = await build(t, { authFailureLimitMax: 1, trustProxy: true }, { ...loggerOptions('info', false), stream })
  t.equal((await failure(app, gateway, '198.51.100.001')).statusCode, 401)
  for (const forged of ['0xc6.51.100.1', '3325256705', '198.51.100.1:1234', 'not-an-ip', `203.0.113.1${'x'.repeat(7000)}`]) {
    t.equal((await failure(app, gateway, forged)).statusCode, 429, `${forged.slice(0, 20)}: the gateway's budget, already spent`)
  }
  const addresses = new Set(lines.flatMap((line) => ((line.req as { remoteAddress?: string } | undefined)?.remoteAddress ?? [])))
  t.strictSame([...addresses], [gateway], 'and it is logged as the gateway, never as given')
  t.equal((await failure(app, gateway, '::ffff:198.51.100.9')).statusCode, 401, 'a valid forwarded address has its own budget')
  t.equal((await failure(app, gateway, '198.51.100.9')).statusCode, 429, 'the same address in another spelling shares it')
})

t.test('a bearer token in the query string is 400 invalid_request, and the logs never hold it (RFC 6750 §2.3)', async (t) => {
  const { stream, lines } = logSink()
  const app = await build(t, {}, { ...loggerOptions('info', false), stream })
  for (const headers of [{ 'content-type': 'application/json' }, JSON_HEADERS]) {
    const response = await app.inject({ method: 'POST', url: `/plants?access_token=${TOKEN}`, headers, payload: { id: 1, name: 'Ficus' } })
    t.same(contractViolations(response), [])
    assertErrorBody(t, response, 400)
    t.match(response.json(), { message: /^invalid_request: send the bearer token in the Authorization header/ })
    t.equal(response.headers['www-authenticate'], 'Bearer realm="plant-store", error="invalid_request"')
  }
  for (const method of ['GET', 'TRACE', 'PROPFIND'] as const) {
    t.equal((await app.inject({ method: method as 'GET', url: `/health/live?access_token=${TOKEN}` })).statusCode, 400, `on every route and method: ${method}`)
  }
  t.ok(lines.some((line) => line.msg === 'request completed'), 'requests were logged')
  t.notMatch(JSON.stringify(lines), TOKEN, 'the token is in no log line')
})

/** A connection to `url`'s port, once the client side is open. */
async function connection(url: string): Promise<Socket> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  await once(socket, 'connect')
  return socket
}

t.test('past MAX_CONNECTIONS a new connection is closed at once; the open ones are served', async (t) => {
  const { app, url } = await listen(t, { maxConnections: 2 })
  const held = [await connection(url), await connection(url)]
  t.teardown(() => held.forEach((socket) => socket.destroy()))
  while ((await new Promise<number>((resolve) => app.server.getConnections((_, count) => resolve(count)))) < 2);
  const dropped = once(app.server, 'drop')
  const extra = await connection(url)
  extra.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n')
  const received: Buffer[] = []
  extra.on('data', (chunk: Buffer) => received.push(chunk))
  await once(extra, 'close')
  await dropped
  t.equal(Buffer.concat(received).length, 0, 'the extra connection got no answer')
  const answer = once(held[0]!, 'data')
  held[0]!.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n')
  t.match(String((await answer)[0]), /^HTTP\/1\.1 200/, 'a held connection is served')
})

/**
 * Writes `request` on `socket` and gathers what comes back until `done` says so, the server
 * closes, or `waitMs` pass (a bound on a test that fails, not a speed limit).
 */
async function until(socket: Socket, request: string, done: (received: string) => boolean, waitMs = 10_000): Promise<{ received: string; closed: boolean }> {
  let received = ''
  let closed = socket.destroyed
  const settled = new Promise<void>((resolve) => {
    setTimeout(resolve, waitMs).unref()
    const check = () => (closed || done(received)) && resolve()
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      check()
    })
    socket.once('close', () => {
      closed = true
      check()
    })
  })
  socket.write(request)
  await settled
  return { received, closed }
}

const AUTHORIZED = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }

t.test('an error answer to a request no operation accepted, or whose body is unread, ends the connection (RFC 9112 §9.6)', async (t) => {
  const { url } = await listen(t)
  const cases: Array<[string, string, number]> = [
    ['an unknown path', `${requestHead('GET', '/nothing')}\r\n`, 404],
    ['a method /plants has no operation for', `${requestHead(otherMethod('/plants'), '/plants')}\r\n`, 405],
    ['a wrong token, its body dripping', `${requestHead('POST', '/plants', { Authorization: 'Bearer wrong', 'Content-Type': 'application/json', 'Content-Length': '100' })}\r\n{`, 401],
    ['another media type, its body unread', `${requestHead('POST', '/plants', { ...AUTHORIZED, 'Content-Type': 'text/plain', 'Content-Length': '100' })}\r\n{`, 415],
  ]
  for (const [what, request, status] of cases) {
    const socket = await connection(url)
    t.teardown(() => socket.destroy())
    const { received, closed } = await until(socket, request, () => false)
    t.match(received, new RegExp(`^HTTP/1\\.1 ${status} [^]*\\r\\nconnection: close\\r\\n`, 'i'), `${what}: ${status}, Connection: close`)
    t.ok(closed, `${what}: the server closed the connection`)
  }
  const socket = await connection(url)
  t.teardown(() => socket.destroy())
  const body = '{"id":1,"name":"Ficus"}'
  const kept = await until(socket, `${requestHead('POST', '/plants', { ...AUTHORIZED, 'Content-Length': String(body.length) })}\r\n${body}`, (received) => received.endsWith('}'))
  t.match(kept.received, /^HTTP\/1\.1 200 [^]*\r\nconnection: keep-alive\r\n/i, 'a create keeps its connection')
  t.notOk(kept.closed)
})

t.test('idle connections after a 404 do not lock a create out of MAX_CONNECTIONS', async (t) => {
  const { url } = await listen(t, { maxConnections: 20 })
  const idle = await Promise.all(Array.from({ length: 20 }, () => connection(url)))
  t.teardown(() => idle.forEach((socket) => socket.destroy()))
  const answers = await Promise.all(idle.map((socket) => until(socket, `${requestHead('GET', '/nothing')}\r\n`, () => false)))
  t.ok(answers.every(({ received, closed }) => received.startsWith('HTTP/1.1 404 ') && closed), 'each got 404 and was closed')
  t.equal((await postPlant(url, { id: 1, name: 'Ficus' }, { timeoutMs: 10_000 })).statusCode, 200)
})

t.test('Expect: 100-continue: 100 Continue only once the token is checked (RFC 9110 §10.1.1)', async (t) => {
  const { url } = await listen(t)
  const body = '{"id":1,"name":"Ficus"}'
  const head = (headers: Record<string, string>) => `${requestHead('POST', '/plants', { ...headers, 'Content-Type': 'application/json', Expect: '100-continue', 'Content-Length': String(body.length) })}\r\n`
  const refused = await connection(url)
  t.teardown(() => refused.destroy())
  const { received } = await until(refused, head({ Authorization: 'Bearer wrong' }), () => false)
  t.match(received, /^HTTP\/1\.1 401 /, 'without a valid token: 401, never 100')
  const invited = await connection(url)
  t.teardown(() => invited.destroy())
  const interim = await until(invited, head({ Authorization: `Bearer ${TOKEN}` }), (text) => text.includes('\r\n\r\n'))
  t.match(interim.received, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'with one: 100 Continue, before the body is sent')
  const final = await until(invited, body, (text) => text.endsWith('}'))
  t.match(final.received, /HTTP\/1\.1 200 /, 'then 200 for the body')
})

t.test('no error answer is cached: Cache-Control no-store on 401, 404, 405 and on what the HTTP parser rejects', async (t) => {
  const { app, url } = await listen(t)
  for (const request of [
    { method: 'POST' as const, url: '/plants', headers: { 'content-type': 'application/json' }, payload: '{}' },
    { method: 'GET' as const, url: '/nowhere' },
    { method: otherMethod('/plants') as 'GET', url: '/plants' },
    { method: 'GET' as const, url: '/docs/static/nothing-here.js' },
  ]) {
    const response = await app.inject(request)
    t.ok(response.statusCode >= 400, `${request.method} ${request.url}: ${response.statusCode}`)
    t.equal(response.headers['cache-control'], 'no-store')
  }
  const malformed = await exchange({ url }, 'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n')
  t.equal(malformed.statusCode, 400)
  t.equal(malformed.headers['cache-control'], 'no-store', 'written straight to the socket too')
})
