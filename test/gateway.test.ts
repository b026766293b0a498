/**
 * The example gateway (`deploy/nginx/`, real nginx, TLS) in front of two replicas of
 * the service (real processes on one store): every response a client can get
 * through it, from the service or from nginx itself, carries the contract's `Error`
 * body with `error` equal to the status, and what the gateway answers itself is
 * declared for `POST /plants` (openapi.yaml). Also: the client's address reaches the
 * service and cannot be spoofed, upstream keep-alive, and the limits of the gateway
 * lined up with the service's.
 *
 * The replicas are a parameter of the gateway (`upstreams`, `host:port` each):
 * {@link startReplicas} is the one place that decides what runs behind it.
 *
 * @module
 */
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http'
import { Agent, request } from 'node:https'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Ajv2020 } from 'ajv/dist/2020.js'
import t, { type Test } from 'tap'
import { loadContract } from '../service/contract.js'
import { type Gateway, GATEWAY_PREFIX, NGINX, NGINX_DIR, freePort, selfSignedCertificate, startGateway } from './deploy/nginx.js'
import { contractViolations, freshStore, testConfig, TOKEN } from './helper.js'
import { type ServiceProcess, startService } from './process-helper.js'
import { exchange, type RawResponse } from './raw-http.js'

// Two service processes, two or three nginx instances, and a 504 that takes the gateway's read timeout.
t.setTimeout(180_000)

const isErrorBody = new Ajv2020({ strict: false }).addFormat('int32', true).compile((loadContract().components as { schemas: { Error: object } }).schemas.Error)
const { bodyLimit, keepAliveTimeoutMs, headersTimeoutMs } = testConfig()
/** The address nginx connects to the replicas from, which they trust for X-Forwarded-* (TRUST_PROXY). */
const GATEWAY_ADDRESS = '127.0.0.1'
/** Another loopback address for the client, so that its address and the gateway's differ. */
const CLIENT_ADDRESS = '127.0.0.2'

/**
 * Two replicas of the service on one fresh store, trusting X-Forwarded-* from the
 * gateway only. Started one after the other: the first applies the migrations.
 */
async function startReplicas(t: Test): Promise<ServiceProcess[]> {
  const store = await freshStore(t)
  const env = {
    PLANT_STORE_TOKENS: TOKEN,
    DATA_DIR: store.dataDir,
    ...(store.databaseUrl === undefined ? {} : { DATABASE_URL: store.databaseUrl }),
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    TRUST_PROXY: GATEWAY_ADDRESS,
  }
  const first = await startService(t, env)
  return [first, await startService(t, env)]
}

const replicas = await startReplicas(t)
const upstreams = replicas.map((replica) => new URL(replica.url).host)
const gateway = await startGateway(t, { upstreams })
const plants = `${GATEWAY_PREFIX}/plants`

/** Lines of a request's head: `Name: value\r\n` each. */
function lines(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
}

const AUTHORIZED = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }

/** A whole `POST /plants` request (through the gateway unless `path` says otherwise), one per connection. */
function post(body: string, headers: Record<string, string> = AUTHORIZED, path = plants): string {
  return `POST ${path} HTTP/1.1\r\nHost: localhost\r\n${lines(headers)}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
}

/** Sends raw bytes to `target` (the gateway by default) and reads its response. */
async function send(raw: string | string[], target: Gateway = gateway, localAddress?: string): Promise<RawResponse> {
  return exchange({ url: target.origin, ca: target.ca, localAddress }, raw)
}

/** A JSON body of exactly `size` bytes: a NewPlant whose name fills it. */
function bodyOf(size: number, id: number): string {
  const head = `{"id":${id},"name":"`
  return `${head}${'n'.repeat(size - head.length - 2)}"}`
}

/** The response has the Error body with `error` equal to `status`, as JSON, with one X-Request-Id. */
function errorBody(t: Test, response: RawResponse, status: number): void {
  t.equal(response.statusCode, status, `status ${status}`)
  t.match(response.headers['content-type'], /^application\/json/, 'JSON')
  let body: unknown
  t.doesNotThrow(() => (body = JSON.parse(response.body)), `valid JSON: ${response.body}`)
  t.ok(isErrorBody(body), `the Error schema: ${response.body}`)
  t.equal((body as { error?: unknown } | undefined)?.error, status, 'error equals the status')
  t.match(response.headers['x-request-id'], /^[0-9a-f]{32}$/, "the gateway's request id")
}

/** Who answered, from the gateway's access log: the gateway itself (nothing forwarded) or a replica, and its status. */
async function answeredBy(response: RawResponse, target: Gateway = gateway): Promise<{ upstream: string; upstreamStatus: string }> {
  const entry = await target.accessEntry(response.headers['x-request-id']!)
  return { upstream: entry.upstream as string, upstreamStatus: entry.upstreamStatus as string }
}

/** A JSON log line of a replica that has `requestId` and `msg` (pino), once the replica has written it. */
async function serviceLine(replica: ServiceProcess, requestId: string, msg: string): Promise<Record<string, unknown>> {
  const [line] = await replica.waitFor(new RegExp(`^\\{.*"requestId":"${requestId}".*"msg":"${msg}".*\\}$`, 'm'))
  return JSON.parse(line) as Record<string, unknown>
}

t.test('POST /plants through the gateway: 200 with the Plant, both replicas serve, each over one kept-alive connection', async (t) => {
  // One client connection: one nginx worker, so each replica should see one connection from it.
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.ca })
  t.teardown(() => agent.destroy())
  const ids: string[] = []
  for (let id = 1; id <= 8; id++) {
    const body = JSON.stringify({ id, name: `Fern ${id}` })
    const { status, text, requestId } = await new Promise<{ status: number; text: string; requestId: string }>((resolve, reject) => {
      const sent = request(`${gateway.url}/plants`, { method: 'POST', agent, headers: { ...AUTHORIZED, 'content-length': Buffer.byteLength(body) } }, (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += chunk.toString()))
        response.on('end', () => resolve({ status: response.statusCode!, text, requestId: String(response.headers['x-request-id']) }))
      })
      sent.on('error', reject)
      sent.end(body)
    })
    t.equal(status, 200)
    t.strictSame(JSON.parse(text), { name: `Fern ${id}` })
    ids.push(requestId)
  }
  const entries = await Promise.all(ids.map((id) => gateway.accessEntry(id)))
  t.same(new Set(entries.map((entry) => entry.upstream)), new Set(upstreams), 'both replicas served')
  for (const [index, replica] of replicas.entries()) {
    const served = entries.filter((entry) => entry.upstream === upstreams[index]).map((entry) => entry.requestId as string)
    const ports = new Set(await Promise.all(served.map(async (id) => ((await serviceLine(replica, id, 'incoming request')).req as { remotePort: number }).remotePort)))
    t.equal(ports.size, 1, `replica ${index + 1}: ${served.length} requests over one connection from the gateway`)
  }
})

t.test("the client's address reaches the service's logs, and an X-Forwarded-For the client sends does not", async (t) => {
  const spoofed = { ...AUTHORIZED, 'X-Forwarded-For': '203.0.113.7', 'X-Real-IP': '203.0.113.7', Forwarded: 'for=203.0.113.7' }
  const response = await send(post('{"id":100,"name":"Calathea"}', spoofed), gateway, CLIENT_ADDRESS)
  t.equal(response.statusCode, 200)
  const requestId = response.headers['x-request-id']!
  const { upstream } = await answeredBy(response)
  t.equal((await gateway.accessEntry(requestId)).client, CLIENT_ADDRESS, "the gateway's log has the client")
  const replica = replicas[upstreams.indexOf(upstream)]!
  const line = await serviceLine(replica, requestId, 'incoming request')
  t.equal((line.req as { remoteAddress: string }).remoteAddress, CLIENT_ADDRESS, "the service's log has the client, with the gateway's request id")

  // Straight to a replica, the same headers are not believed: only the gateway's address is trusted.
  const direct = await exchange({ url: replicas[0]!.url, localAddress: CLIENT_ADDRESS }, post('{"id":101,"name":"Calathea"}', spoofed, '/plants'))
  t.equal(direct.statusCode, 200)
  const directLine = await serviceLine(replicas[0]!, direct.headers['x-request-id']!, 'incoming request')
  t.equal((directLine.req as { remoteAddress: string }).remoteAddress, CLIENT_ADDRESS, 'a direct client cannot name another address')
})

t.test('a body up to BODY_LIMIT reaches the service; a larger one is 413 with the Error body from the gateway, before authentication', async (t) => {
  const fits = await send(post(bodyOf(bodyLimit, 200)))
  t.equal(fits.statusCode, 200, `${bodyLimit} bytes are stored`)
  t.equal((await answeredBy(fits)).upstreamStatus, '200')

  const tooLarge = bodyOf(bodyLimit + 1, 201)
  const chunked = `POST ${plants} HTTP/1.1\r\nHost: localhost\r\n${lines(AUTHORIZED)}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${tooLarge.length.toString(16)}\r\n${tooLarge}\r\n0\r\n\r\n`
  for (const [what, raw] of [
    ['with a token', post(tooLarge)],
    ['without a token', post(tooLarge, { 'Content-Type': 'application/json' })],
    ['chunked, without Content-Length', chunked],
  ] as const) {
    const response = await send(raw)
    errorBody(t, response, 413)
    t.same(contractViolations(response), [], `${what}: declared for POST /plants`)
    t.equal((await answeredBy(response)).upstream, '', `${what}: answered by the gateway, nothing forwarded`)
  }
  const direct = await exchange({ url: replicas[0]!.url }, post(tooLarge, AUTHORIZED, '/plants'))
  t.equal(direct.statusCode, 413)
  t.equal(direct.body, (await send(post(tooLarge))).body, "the service's own 413 has the same body")
})

/** Requests nginx answers itself, and the status it gives each (nothing reaches a replica). */
const gatewayAnswers: Array<[string, string, number]> = [
  ['a malformed request line', 'GARBAGE\r\n\r\n', 400],
  ['no Host header', `POST ${plants} HTTP/1.1\r\n${lines(AUTHORIZED)}Content-Length: 2\r\n\r\n{}`, 400],
  ['two Host headers', `POST ${plants} HTTP/1.1\r\nHost: a\r\nHost: b\r\n${lines(AUTHORIZED)}Content-Length: 2\r\n\r\n{}`, 400],
  ['Content-Length with Transfer-Encoding', `POST ${plants} HTTP/1.1\r\nHost: localhost\r\n${lines(AUTHORIZED)}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, 400],
  ['two Content-Lengths', `POST ${plants} HTTP/1.1\r\nHost: localhost\r\n${lines(AUTHORIZED)}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, 400],
  ['an invalid chunk size', `POST ${plants} HTTP/1.1\r\nHost: localhost\r\n${lines(AUTHORIZED)}Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n`, 400],
  ['a malformed percent-encoding', `POST ${plants}%zz HTTP/1.1\r\nHost: localhost\r\n${lines(AUTHORIZED)}Content-Length: 2\r\n\r\n{}`, 400],
  ['an unknown Transfer-Encoding', `POST ${plants} HTTP/1.1\r\nHost: localhost\r\n${lines(AUTHORIZED)}Transfer-Encoding: gzip\r\n\r\n{}`, 501],
  ['a request target over 8 KiB', post('{}', AUTHORIZED, `${plants}?${'q'.repeat(8200)}`), 414],
  ['a header line over 8 KiB', post('{}', { ...AUTHORIZED, 'X-Big': 'b'.repeat(8200) }), 431],
  ['headers over 16 KiB', post('{}', { ...AUTHORIZED, 'X-A': 'a'.repeat(6000), 'X-B': 'b'.repeat(6000), 'X-C': 'c'.repeat(6000) }), 431],
  ['HTTP/2.0 in an HTTP/1 request line', `POST ${plants} HTTP/2.0\r\nHost: localhost\r\n\r\n`, 505],
]

for (const [what, raw, status] of gatewayAnswers) {
  t.test(`${what}: the gateway answers ${status} with the Error body`, async (t) => {
    const response = await send(raw)
    errorBody(t, response, status)
    if (raw.startsWith(`POST ${plants} `)) t.same(contractViolations(response), [], 'declared for POST /plants')
    t.equal((await answeredBy(response)).upstream, '', 'nothing forwarded')
  })
}

t.test('plain HTTP to the TLS port: 400 with the Error body', async (t) => {
  const response = await exchange({ url: gateway.origin.replace('https:', 'http:') }, post('{"id":300,"name":"Fern"}'))
  errorBody(t, response, 400)
  t.same(contractViolations(response), [])
})

t.test('outside the public routes (/plants, /docs under the prefix): 404 with the Error body from the gateway', async (t) => {
  for (const path of ['/', '/plants', '/metrics', GATEWAY_PREFIX, `${GATEWAY_PREFIX}/`, `${GATEWAY_PREFIX}/metrics`, `${GATEWAY_PREFIX}/health/ready`, `${GATEWAY_PREFIX}/../metrics`, `${GATEWAY_PREFIX}/%2e%2e/metrics`, '/.plant-store-errors/502']) {
    const response = await send(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)
    errorBody(t, response, 404)
    t.equal((await answeredBy(response)).upstream, '', `${path}: nothing forwarded`)
  }
})

t.test("the service's own errors pass through the gateway unchanged, with their headers", async (t) => {
  t.equal((await send(post('{"id":400,"name":"Fern"}'))).statusCode, 200)
  const cases: Array<[string, string, number, Record<string, RegExp>]> = [
    ['no token', post('{"id":401,"name":"Fern"}', { 'Content-Type': 'application/json' }), 401, { 'www-authenticate': /^Bearer realm=/ }],
    ['text/plain', post('{"id":402,"name":"Fern"}', { ...AUTHORIZED, 'Content-Type': 'text/plain' }), 415, {}],
    ['a string id', post('{"id":"403","name":"Fern"}'), 400, {}],
    ['the same id, another name', post('{"id":400,"name":"Moss"}'), 409, {}],
    ['headers that fit the gateway, not the service (16 KiB with what the gateway adds)', post('{"id":404,"name":"Fern"}', { ...AUTHORIZED, 'X-A': 'a'.repeat(8100), 'X-B': 'b'.repeat(8100) }), 431, {}],
  ]
  for (const [what, raw, status, headers] of cases) {
    const response = await send(raw)
    errorBody(t, response, status)
    t.same(contractViolations(response), [], `${what}: declared for POST /plants`)
    t.match(response.headers, headers, `${what}: its headers`)
    t.equal((await answeredBy(response)).upstreamStatus, String(status), `${what}: answered by the service`)
  }
  const method = await send(`GET ${plants} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)
  errorBody(t, method, 405)
  t.equal(method.headers.allow, 'POST')
  const badUrl = await send(`GET ${GATEWAY_PREFIX}/docs/%C0 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)
  errorBody(t, badUrl, 400)
  t.equal((await answeredBy(badUrl)).upstreamStatus, '400', 'a malformed UTF-8 escape is the service’s to refuse')
})

t.test('no replica reachable: 502 with the Error body; a replica down is skipped for another', async (t) => {
  const nowhere = `127.0.0.1:${await freePort()}`
  const alone = await startGateway(t, { upstreams: [nowhere] })
  const response = await send(post('{"id":500,"name":"Fern"}'), alone)
  errorBody(t, response, 502)
  t.same(contractViolations(response), [])

  const oneDown = await startGateway(t, { upstreams: [nowhere, upstreams[0]!] })
  for (let id = 501; id <= 504; id++) {
    t.equal((await send(post(`{"id":${id},"name":"Fern"}`), oneDown)).statusCode, 200, `create ${id} reaches the live replica`)
  }
})

t.test('a replica that does not answer: 504 with the Error body after the gateway’s read timeout', async (t) => {
  // Accepts connections and reads, never answers.
  const sockets = new Set<Socket>()
  const stalled = createServer((socket) => {
    sockets.add(socket)
    socket.resume()
  })
  stalled.listen(0, '127.0.0.1')
  await once(stalled, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    stalled.close()
  })
  const slow = await startGateway(t, { upstreams: [`127.0.0.1:${(stalled.address() as { port: number }).port}`] })
  const response = await send(post('{"id":600,"name":"Fern"}'), slow)
  errorBody(t, response, 504)
  t.same(contractViolations(response), [])
})

t.test('what the gateway sends a replica: the client address set (not appended), https, the host, its request id, HTTP/1.1 kept alive', async (t) => {
  const seen: Array<{ httpVersion: string; headers: IncomingHttpHeaders; url: string }> = []
  const recorder = createHttpServer((incoming, response) => {
    seen.push({ httpVersion: incoming.httpVersion, headers: incoming.headers, url: incoming.url! })
    incoming.resume()
    incoming.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"name":"Fern"}'))
  })
  recorder.listen(0, '127.0.0.1')
  await once(recorder, 'listening')
  t.teardown(() => {
    recorder.closeAllConnections()
    recorder.close()
  })
  const recorded = await startGateway(t, { upstreams: [`127.0.0.1:${(recorder.address() as { port: number }).port}`] })
  const spoofed = { ...AUTHORIZED, 'X-Forwarded-For': '203.0.113.7', 'X-Forwarded-Proto': 'http', 'X-Forwarded-Host': 'evil.example', Forwarded: 'for=203.0.113.7', 'X-Request-Id': 'chosen-by-client' }
  const response = await send(post('{"id":700,"name":"Fern"}', spoofed), recorded, CLIENT_ADDRESS)
  t.equal(response.statusCode, 200)
  const [{ httpVersion, headers, url }] = seen as [(typeof seen)[0]]
  t.equal(url, '/plants', 'the prefix is stripped')
  t.equal(httpVersion, '1.1')
  t.equal(headers.connection, undefined, 'no Connection: close (keep-alive)')
  t.equal(headers['x-forwarded-for'], CLIENT_ADDRESS)
  t.equal(headers['x-forwarded-proto'], 'https')
  t.equal(headers['x-forwarded-host'], 'localhost', 'the Host the client sent, not its X-Forwarded-Host')
  t.equal(headers.forwarded, undefined)
  t.equal(headers['x-request-id'], response.headers['x-request-id'], "the gateway's request id, returned to the client")
  t.equal(headers.authorization, `Bearer ${TOKEN}`, 'the credentials pass')
})

t.test("the gateway's limits line up with the service's defaults", async (t) => {
  const conf = readFileSync(join(NGINX_DIR, 'nginx.conf'), 'utf8')
  /** A size or time directive's value in bytes or milliseconds (`64k`, `10s`). */
  const value = (pattern: RegExp): number => {
    const [, number, unit] = /(\d+)([kms]?)\s*;/.exec(pattern.exec(conf)![1]!)!
    return Number(number) * ({ k: 1024, m: 1024 * 1024, s: 1000, '': 1 } as Record<string, number>)[unit!]!
  }
  t.equal(value(/\n\s*client_max_body_size\s+([^;]+;)/), bodyLimit, 'client_max_body_size is BODY_LIMIT')
  t.ok(value(/\n\s*client_body_buffer_size\s+([^;]+;)/) >= bodyLimit, 'a body up to BODY_LIMIT stays in memory')
  t.ok(value(/\n\s*client_header_timeout\s+([^;]+;)/) <= headersTimeoutMs, 'the gateway gives up on headers no later than the service')
  const idle = value(/upstream plant_store \{[^}]*?\n\s*keepalive_timeout\s+([^;]+;)/)
  t.ok(idle < keepAliveTimeoutMs, `the gateway drops idle upstream connections (${idle} ms) before the service (${keepAliveTimeoutMs} ms)`)
})

t.test('the example configuration, every file as shipped, passes nginx -t (with a certificate where listen.conf names it)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-nginx-example-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(NGINX_DIR, dir, { recursive: true })
  mkdirSync(join(dir, 'tls'))
  await selfSignedCertificate(join(dir, 'tls', 'fullchain.pem'), join(dir, 'tls', 'privkey.pem'))
  const { stderr } = await promisify(execFile)(NGINX, ['-t', '-c', join(dir, 'nginx.conf'), '-p', `${dir}/`])
  t.match(stderr, /test is successful/)
})
