/**
 * Connections a hostile client holds: bounded, closed after an error answer; `100 Continue` once authenticated; error
 * answers never cached.
 */
import { once } from 'node:events'
import t, { type Test } from 'tap'
import { listen, TOKEN } from '../helpers/app.ts'
import { otherMethod } from '../helpers/contract.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { connected, exchange, gather, requestHead } from '../helpers/raw-http.ts'

t.test('past MAX_CONNECTIONS a new connection is closed at once; the open ones are served', async (t) => {
  const { app, url } = await listen(t, { maxConnections: 2 })
  const held = [await open(t, url), await open(t, url)]
  while ((await new Promise<number>((resolve) => app.server.getConnections((_, count) => resolve(count)))) < 2);
  const dropped = once(app.server, 'drop')
  const live = `${requestHead('GET', '/health/live')}\r\n`
  t.same(await gather(await open(t, url), live), { received: '', closed: true }, 'the extra: no answer')
  await dropped
  const { received } = await gather(held[0]!, live, (text) => text.includes('\r\n\r\n'))
  t.match(received, /^HTTP\/1\.1 200/, 'a held connection is served')
})

const open = (t: Test, url: string, localAddress?: string) => connected({ url, localAddress }, t)

const BODY = '{"id":1,"name":"Ficus"}'
/** The head of an authorized POST /plants of BODY, `headers` over its own. */
const postHead = (headers: Record<string, string> = {}) =>
  `${requestHead('POST', '/plants', { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Content-Length': String(BODY.length), ...headers })}\r\n`

t.test(
  'an error answer to a request not accepted, or whose body is unread, ends the connection (RFC 9112 §9.6)',
  async (t) => {
    const { url } = await listen(t)
    const cases: Array<[string, string, number]> = [
      ['an unknown path', `${requestHead('GET', '/nothing')}\r\n`, 404],
      ['a method /plants has no operation for', `${requestHead(otherMethod('/plants'), '/plants')}\r\n`, 405],
      ['a wrong token, its body dripping', `${postHead({ Authorization: 'Bearer x', 'Content-Length': '100' })}{`, 401],
      [
        'another media type, its body unread',
        `${postHead({ 'Content-Type': 'text/plain', 'Content-Length': '99' })}{`,
        415,
      ],
    ]
    for (const [what, request, status] of cases) {
      const { received, closed } = await gather(await open(t, url), request)
      t.match(received, new RegExp(`^HTTP/1\\.1 ${status} [^]*\\r\\nconnection: close\\r\\n`, 'i'), what)
      t.ok(closed, `${what}: closed`)
    }
    const kept = await gather(await open(t, url), postHead() + BODY, (received) => received.endsWith('}'))
    t.match(kept.received, /^HTTP\/1\.1 200 [^]*\r\nconnection: keep-alive\r\n/i, 'a create keeps its connection')
    t.notOk(kept.closed)
  },
)

t.test('idle connections after a 404 do not lock a create out of MAX_CONNECTIONS', async (t) => {
  const { url } = await listen(t, { maxConnections: 20 })
  const idle = await Promise.all(Array.from({ length: 20 }, () => open(t, url)))
  const answers = await Promise.all(idle.map((socket) => gather(socket, `${requestHead('GET', '/nothing')}\r\n`)))
  const closed404 = answers.filter(({ received, closed }) => received.startsWith('HTTP/1.1 404 ') && closed)
  t.equal(closed404.length, idle.length, 'each got 404 and was closed')
  t.equal((await postPlant(url, { id: 1, name: 'Ficus' }, { timeoutMs: 10_000 })).statusCode, 200)
})

t.test('idle keep-alive connections after a 200 never lock a new client out of MAX_CONNECTIONS', async (t) => {
  const { url } = await listen(t, { maxConnections: 20 })
  const idle = await Promise.all(Array.from({ length: 20 }, () => open(t, url, '127.0.0.2')))
  const paths = ['/health/live', '/health/ready', '/docs/json', '/metrics']
  const answers = await Promise.all(
    idle.map((socket, index) =>
      gather(socket, `${requestHead('GET', paths[index % paths.length]!)}\r\n`, (text) =>
        /\r\n\r\n[^]*[}\n]$/.test(text),
      ),
    ),
  )
  t.equal(answers.filter(({ received }) => received.startsWith('HTTP/1.1 200 ')).length, 20, 'each got its 200')
  const started = Date.now()
  t.equal((await postPlant(url, { id: 1, name: 'Ficus' }, { timeoutMs: 10_000 })).statusCode, 200)
  t.ok(Date.now() - started < 2000, `a create from another address answered in ${Date.now() - started} ms (< 2 s)`)
})

t.test('Expect: 100-continue: 100 Continue only once the token is checked (RFC 9110 §10.1.1)', async (t) => {
  const { url } = await listen(t)
  const head = (headers = {}) => postHead({ ...headers, Expect: '100-continue' })
  const { received } = await gather(await open(t, url), head({ Authorization: 'Bearer wrong' }))
  t.match(received, /^HTTP\/1\.1 401 /, 'without a valid token: 401, never 100')
  const invited = await open(t, url)
  const interim = await gather(invited, head(), (text) => text.includes('\r\n\r\n'))
  t.match(interim.received, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'with one: 100 Continue, before the body is sent')
  const final = await gather(invited, BODY, (text) => text.endsWith('}'))
  t.match(final.received, /HTTP\/1\.1 200 /, 'then 200 for the body')
})

t.test('no error answer is cached: no-store on 401, 404, 405 and what the HTTP parser rejects', async (t) => {
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
  t.match(malformed, { statusCode: 400, headers: { 'cache-control': 'no-store' } }, 'written to the socket too')
})
