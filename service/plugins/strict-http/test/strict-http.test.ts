/**
 * strict-http on a bare Fastify app over real sockets: the error body, Host, Expect, CONNECT,
 * 404/405, the connection policy, the pipelining bound, room at the connection cap, and an
 * error answered after the answers ahead of it.
 *
 * @module
 */
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import { connect, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import strictHttp, { frameworkErrors, STRICT_HTTP_DEFAULTS, type StrictHttpOptions, toErrorResponse } from '../index.ts'

/** A bare app with the plugin and a few routes; its log lines in `lines`. */
async function bareApp(t: Test, options: StrictHttpOptions = {}) {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as (typeof lines)[0])
      done()
    },
  })
  const app = Fastify({ logger: { level: 'info', stream }, frameworkErrors, http: { requireHostHeader: false } })
  await app.register(strictHttp, options)
  app.get('/things/:id', async ({ params }) => params)
  app.delete('/things/:id', async () => ({ deleted: true }))
  app.get('/things/:id', { constraints: { version: '2.0.0' } }, async () => ({ version: 2 }))
  app.post('/echo', async (request) => request.body)
  app.post('/invited', { onRequest: async (_request, reply) => reply.raw.writeContinue() }, async () => ({}))
  app.get('/slow', async () => {
    await new Promise((resolve) => setTimeout(resolve, 100))
    return { slow: true }
  })
  app.get('/missing', async (_request, reply) => reply.callNotFound())
  app.get('/fail', async () => {
    throw new Error('a secret cause')
  })
  app.get('/unavailable', async () => {
    throw Object.assign(new Error('Come back later'), {
      statusCode: 503,
      expose: true,
      headers: { 'retry-after': '1', x: 2 },
    })
  })
  // A parser that leaves the body unread, so the route answers while it still arrives.
  app.addContentTypeParser('text/x-stream', (_request, _payload, done) => done(null, undefined))
  app.post('/stream', async (_request, reply) => {
    // An answer begun before the body has arrived.
    reply.raw.writeHead(200, { 'content-type': 'text/plain' })
    reply.raw.write('begun')
    setTimeout(() => reply.raw.end(' and done'), 200)
    return reply.hijack()
  })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { app, port: Number(new URL(url).port), lines }
}

/** A connection to `port`, its errors ignored, once connected. */
async function open(port: number) {
  const socket = connect(port, '127.0.0.1').on('error', () => {})
  await once(socket, 'connect')
  return socket
}

/** Writes `text` (each part 50 ms after the last) on a new connection; reads until closed or `done` holds. */
async function raw(
  port: number,
  text: string | string[],
  done: (received: string) => boolean = () => false,
  waitMs = 5000,
) {
  const socket = await open(port)
  let received = ''
  let closed = false
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, waitMs)
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      if (done(received)) resolve()
    })
    socket.on('close', () => {
      closed = true
      clearTimeout(timer)
      resolve()
    })
    const [first, ...rest] = [text].flat()
    socket.write(first!)
    for (const [index, part] of rest.entries()) setTimeout(() => socket.write(part), 50 * (index + 1))
  })
  socket.destroy()
  return { received, closed }
}

const ECHO = 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
const INVITED = 'POST /invited HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
const STREAM = 'POST /stream HTTP/1.1\r\nHost: x\r\nContent-Type: text/x-stream\r\nTransfer-Encoding: chunked\r\n\r\n'
const get = (path: string, headers = '') => `GET ${path} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`
const CLOSE = 'Connection: close\r\n'
const OK = /^HTTP\/1\.1 200 /
const bodyOf = (received: string) =>
  JSON.parse(received.slice(received.lastIndexOf('\r\n\r\n') + 4)) as Record<string, unknown>

t.test("the default error body is Fastify's shape; another is an option", async (t) => {
  const { app } = await bareApp(t)
  const response = await app.inject({ url: '/nowhere' })
  t.equal(response.statusCode, 404)
  t.strictSame(response.json(), { statusCode: 404, error: 'Not Found', message: 'Route GET /nowhere not found' })
  t.equal(response.headers['cache-control'], 'no-store')
  t.equal(response.headers.connection, 'close')
  const { app: shaped } = await bareApp(t, {
    errorBody: (status, message) => ({ status, message }),
    requestIdHeader: false,
  })
  const other = await shaped.inject({ url: '/nowhere' })
  t.strictSame(other.json(), { status: 404, message: 'Route GET /nowhere not found' })
  t.notOk(other.headers['x-request-id'])
  const { port } = await bareApp(t, { requestIdHeader: false })
  t.notMatch((await raw(port, 'GARBAGE\r\n\r\n')).received, /x-request-id/, 'nor on what the parser refuses')
})

t.test('405 with Allow for a known path and another method, HEAD where GET is, before any body is read', async (t) => {
  const { app, port } = await bareApp(t)
  for (const method of ['POST', 'PUT', 'PATCH', 'OPTIONS', 'PROPFIND'] as const) {
    const response = await app.inject({
      method,
      url: '/things/7',
      payload: 'x',
      headers: { 'content-type': 'text/plain' },
    })
    t.equal(response.statusCode, 405, method)
    t.equal(response.headers.allow, 'DELETE, GET, HEAD')
    t.equal(response.json().message, 'Method not allowed; /things/{id} allows DELETE, GET, HEAD')
  }
  const { received, closed } = await raw(port, `PUT /things/7 HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{`)
  t.match(received, /^HTTP\/1\.1 405 [^]*\r\nconnection: close\r\n/i, 'answered with the body unread')
  t.ok(closed)
  t.equal((await app.inject({ method: 'HEAD', url: '/things/7' })).statusCode, 200)
  const missing = await app.inject({ url: '/missing' })
  t.equal(missing.statusCode, 404, 'a route that finds nothing: 404, not 405')
  t.equal(missing.json().message, 'Route GET /missing not found')
})

t.test(
  'the error handler: a status and headers carried by the error, 5xx only when exposed, else 500 logged',
  async (t) => {
    const { app, lines } = await bareApp(t)
    const unavailable = await app.inject({ url: '/unavailable' })
    t.equal(unavailable.statusCode, 503)
    t.equal(unavailable.headers['retry-after'], '1')
    t.notOk(unavailable.headers.x, 'only string headers')
    t.equal(unavailable.json().message, 'Come back later')
    const failed = await app.inject({ url: '/fail' })
    t.strictSame(failed.json(), { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' })
    t.ok(
      lines.some(
        (line) => line.msg === 'request failed' && (line.err as { message: string }).message === 'a secret cause',
      ),
    )
    const echo = {
      method: 'POST',
      url: '/echo',
      payload: '{',
      headers: { 'content-type': 'application/json' },
    } as const
    t.equal((await app.inject(echo)).statusCode, 400)
    const plain = (statusCode: number, message: string) => ({ statusCode, headers: {}, message, internal: false })
    t.strictSame(toErrorResponse({ status: 418 }), plain(418, "I'm a Teapot"))
    t.strictSame(toErrorResponse({ statusCode: 400, headers: 'no' }), plain(400, 'Bad Request'))
    t.equal(toErrorResponse({ code: 42 }).statusCode, 500)
    t.equal(toErrorResponse(null).statusCode, 500)
    t.equal(
      toErrorResponse({ code: 'HPE_INVALID_METHOD', rawPacket: Buffer.from('BREW / HTTP/1.1\r\n') }).message,
      'Bad Request: the request method is not one the service knows',
    )
    t.equal(toErrorResponse({ code: 'ENOTHTTP' }).statusCode, 500)
    t.equal(toErrorResponse({ code: 'HPE_INVALID_METHOD' }).message, 'Bad Request: the request is not valid HTTP/1.1')
    const mapped = await bareApp(t, {
      mapError: (error) => Object.assign(new Error('mapped'), { statusCode: 409, cause: error }),
    })
    t.equal((await mapped.app.inject({ url: '/fail' })).statusCode, 409)
  },
)

t.test('Host, Expect and CONNECT', async (t) => {
  const { app, port } = await bareApp(t)
  const noHost = await raw(port, 'GET /things/1 HTTP/1.1\r\n\r\n')
  t.match(noHost.received, /^HTTP\/1\.1 400 /)
  t.match(bodyOf(noHost.received).message, /Host/)
  t.match((await raw(port, 'GET /things/1 HTTP/1.0\r\n\r\n')).received, OK, 'HTTP/1.0 needs none')
  const other = await raw(port, get('/things/1', 'Expect: a-miracle\r\n'), (text) => text.endsWith('}'))
  t.match(other.received, OK, 'another expectation is ignored')
  const left = await raw(port, `${ECHO}Content-Length: 2\r\nExpect: 100-continue\r\n\r\n`, () => false, 500)
  t.equal(left.received, '', "no 100 Continue of Node's before the app accepts the request")
  const invited = await raw(port, `${INVITED}Content-Length: 2\r\nExpect: 100-continue\r\n\r\n`, (text) =>
    text.includes('\r\n\r\n'),
  )
  t.match(invited.received, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, "the app's, once its hook accepts it")
  const tunnel = await raw(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')
  t.match(tunnel.received, /^HTTP\/1\.1 400 [^]*\r\nconnection: close\r\n/)
  t.match(bodyOf(tunnel.received).message, /CONNECT/)
  t.ok(tunnel.closed)
  const badUrl = await app.inject({ url: '/things/%zz' })
  t.equal(badUrl.statusCode, 400, "the router's rejections through frameworkErrors")
  t.equal(badUrl.json().statusCode, 400)
})

t.test(
  'an error refused by the parser is answered after the answers ahead of it, then the connection closes',
  async (t) => {
    const { port, lines } = await bareApp(t)
    const after = await raw(port, `${get('/slow')}${get('/things/1')}\x16\x03\x01garbage\r\n\r\n`)
    t.match(
      after.received,
      /^HTTP\/1\.1 200 [^]*\{"slow":true\}HTTP\/1\.1 200 [^]*\{"id":"1"\}HTTP\/1\.1 400 /,
      'in order',
    )
    t.equal(bodyOf(after.received).message, 'Bad Request: the request is not valid HTTP/1.1')
    t.ok(after.closed)
    const method = await raw(port, `${get('/slow')}BREW /things HTTP/1.1\r\nHost: x\r\n\r\n`)
    t.equal(bodyOf(method.received).message, 'Bad Request: the request method is not one the service knows')
    const big = await raw(port, `${get('/slow')}${get('/things/2', `X-Big: ${'a'.repeat(20_000)}\r\n`)}`)
    t.match(big.received, /\{"slow":true\}HTTP\/1\.1 431 /)
    const body = await raw(port, `${ECHO}Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n`)
    t.match(body.received, /^HTTP\/1\.1 400 /, 'a body still arriving: the error is its answer')
    const begun = await raw(port, [`${STREAM}1\r\na\r\n`, 'ZZ\r\n'])
    t.match(begun.received, /^HTTP\/1\.1 200 [^]*begun[^]* and done/, 'an answer begun is finished, never written over')
    t.notMatch(begun.received, /HTTP\/1\.1 400/)
    t.ok(begun.closed)
    t.ok(lines.some((line) => line.msg === 'request rejected' && line.code === 'HPE_INVALID_METHOD'))
  },
)

t.test('an answer that is never read does not hold the connection past lingerMs', async (t) => {
  const socket = await open((await bareApp(t, { lingerMs: 300 })).port)
  socket.pause()
  socket.write(`${STREAM}1\r\na\r\n`)
  await new Promise((resolve) => setTimeout(resolve, 50))
  socket.write('ZZ\r\n')
  socket.resume()
  const started = Date.now()
  await once(socket, 'close')
  t.ok(Date.now() - started < 2000)
})

t.test(
  'a client that pipelines past maxPipelined unanswered requests is closed; the ones before are handled',
  async (t) => {
    const { app, port } = await bareApp(t, { maxPipelined: 4 })
    let handled = 0
    const aborts: Error[] = []
    app.server.on('request', (request: IncomingMessage) => {
      handled++
      request.on('error', (error) => aborts.push(error))
    })
    const within = await raw(port, get('/things/1').repeat(4), (text) => text.split('HTTP/1.1 200').length === 5)
    t.equal(within.received.split('HTTP/1.1 200').length - 1, 4, 'four pipelined: each answered')
    t.notOk(within.closed)
    const before = handled
    const limit = Error.stackTraceLimit
    const { closed } = await raw(port, get('/slow').repeat(3000))
    t.ok(closed, 'closed past the bound')
    t.ok(handled - before > 1000, `every request of the read parsed (${handled - before}), past the bound too`)
    await new Promise((resolve) => setImmediate(resolve))
    t.equal(aborts.length, handled - before, "Node's abort of each one at the close...")
    t.notOk(
      aborts.some((error) => error.stack?.includes('\n    at ')),
      '...made without a stack',
    )
    t.equal(Error.stackTraceLimit, limit, 'the limit restored')
    t.ok(new Error('later').stack?.includes('\n    at '), 'later errors have their stacks')
    t.equal((await app.inject({ url: '/things/2' })).statusCode, 200)
  },
)

t.test('at maxConnections, the longest idle connection is closed so a new client gets in', async (t) => {
  const { app, port } = await bareApp(t, { maxConnections: 4 })
  const sockets: Socket[] = []
  t.teardown(() => sockets.forEach((socket) => socket.destroy()))
  const closed = [false, false, false]
  for (let index = 0; index < 3; index++) {
    const socket = await open(port)
    socket.on('close', () => (closed[index] = true))
    sockets.push(socket)
    socket.write(get('/things/1'))
    await once(socket, 'data')
  }
  // Served again, the first is now the latest idle: the second has been idle longest, and the newcomer is the fourth.
  const first = sockets[0]!
  first.write(get('/things/2'))
  await once(first, 'data')
  t.match((await raw(port, get('/things/9', CLOSE))).received, OK, 'the newcomer is served')
  t.strictSame(closed, [false, true, false], 'the longest idle was closed, and only it')
  t.match((await raw(port, get('/things/10', CLOSE))).received, OK)
  t.equal(app.server.maxConnections, 4)
  const { port: single } = await bareApp(t, { maxConnections: 1 })
  t.match((await raw(single, get('/things/1', CLOSE))).received, OK, 'none idle: none closed')
})

t.test('a connection error on a socket the plugin did not see, and a reset, are handled', async (t) => {
  const { app, port, lines } = await bareApp(t)
  const fail = (code: string, socket: Socket) =>
    app.server.emit('clientError', Object.assign(new Error(code), { code }), socket)
  /** A client and its server side, and what the client hears until closed. */
  const client = async () => {
    const socket = connect(port, '127.0.0.1')
    const [server] = (await once(app.server, 'connection')) as [Socket]
    let text = ''
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()))
    return { server, heard: async () => (await once(socket, 'close'), text) }
  }
  const reset = await client()
  fail('EODD', new (reset.server.constructor as typeof Socket)())
  fail('ECONNRESET', reset.server)
  t.equal(await reset.heard(), '', 'a reset peer hears nothing')
  const twice = await client()
  for (const code of ['EODD', 'EODDER']) fail(code, twice.server)
  t.equal((await twice.heard()).split('HTTP/1.1 500').length, 2, 'one answer per connection')
  t.notOk(lines.some((line) => (line.err as { code?: string } | undefined)?.code === 'ECONNRESET'))
  t.ok(lines.some((line) => line.msg === 'connection failed'))
})

t.test('after closeConnections every answer closes its connection; before it keep-alive stays', async (t) => {
  const { app } = await bareApp(t)
  t.equal((await app.inject({ url: '/things/1' })).headers.connection, 'keep-alive')
  app.closeConnections()
  t.equal((await app.inject({ url: '/things/1' })).headers.connection, 'close')
  t.equal((await app.inject({ url: '/nothing' })).headers.connection, 'close')
})

t.test("README.md's Options table gives the defaults the plugin uses", async (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  for (const [option, value] of Object.entries(STRICT_HTTP_DEFAULTS)) {
    const cell = readme.match(new RegExp(`^\\| \`${option}\` \\| ([^|]+) \\|`, 'm'))?.[1]?.trim()
    const shown = Array.isArray(value) ? `\`[${value.join(', ')}]\`` : value.toLocaleString('en-US')
    t.equal(cell, shown, option)
  }
})
