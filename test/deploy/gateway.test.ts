/**
 * The example gateway before two hardened containers on one PostgreSQL: the contract, the client's address, the 413,
 * Swagger UI in Chromium, cut connections, the 502.
 */
import { Agent } from 'node:https'
import t from 'tap'
import { loadConfig } from '../../service/config.ts'
import { cutEveryPhase, WRONG_TOKEN } from '../helpers/abort-client.ts'
import { allowedMethods, otherMethod } from '../helpers/contract.ts'
import { requestHead, wholeRequest } from '../helpers/raw-http.ts'
import {
  authorized,
  bodyOf,
  errorBody,
  GATEWAY_PREFIX,
  get,
  PLANTS,
  post,
  send,
  startGateway,
} from '../helpers/nginx.ts'
import { imageUnderTest, podman, randomToken, type Replica, requestLine, startReplicas } from '../helpers/podman.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { createsPlantThroughGateway, launchChromium } from '../helpers/swagger-ui.ts'

t.setTimeout(20 * 60_000)

const token = randomToken()
const AUTHORIZED = authorized(token)
const { bodyLimit } = loadConfig({ NODE_ENV: 'test', PLANT_STORE_TOKENS: token })

const [image, browser] = await Promise.all([imageUnderTest(), launchChromium(t)])
// A busy machine's event loop is no overload of the service.
const replicas = await startReplicas(t, image, 2, token, { LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '0' })
const gateway = await startGateway(t, replicas)

const fern = (id: number | string, headers = AUTHORIZED) => post(JSON.stringify({ id, name: 'Fern' }), headers)
/** POST /plants of `body` straight to `replica`'s published port. */
const direct = (replica: Replica, body: string) => postPlant(replica.url, body, { headers: AUTHORIZED })

// One database under both replicas: test/process/postgres.test.ts and compose.test.ts.
t.test('through the gateway: create 200 on both replicas, each over one kept-alive connection', async (t) => {
  // One client connection, one nginx worker: each replica sees one connection.
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.ca })
  t.teardown(() => agent.destroy())
  const created: Array<{ replica: Replica; port?: number }> = []
  for (let id = 1; id <= 8; id++) {
    const response = await postPlant(gateway.url, { id, name: `Fern ${id}` }, { agent, headers: AUTHORIZED })
    t.same([response.statusCode, response.json()], [200, { name: `Fern ${id}` }], `create ${id}`)
    const { line, replica } = await requestLine(replicas, String(response.headers['x-request-id']))
    created.push({ replica, port: line.req?.remotePort })
  }
  for (const replica of replicas) {
    const ports = created.filter((plant) => plant.replica === replica).map((plant) => plant.port)
    t.ok(ports.length > 0 && new Set(ports).size === 1, `${replica.name}: ${ports.length} creates over one connection`)
  }
})

t.test("the service's own errors pass through the gateway unchanged, with their headers", async (t) => {
  const allow = allowedMethods('/plants').join(', ')
  const big = { ...AUTHORIZED, 'X-A': 'a'.repeat(8100), 'X-B': 'b'.repeat(8100) }
  const cases: Array<[string, string, number, Record<string, RegExp>?]> = [
    ['no token', fern(401, { 'Content-Type': 'application/json' }), 401, { 'www-authenticate': /^Bearer realm=/ }],
    ['text/plain', fern(402, { ...AUTHORIZED, 'Content-Type': 'text/plain' }), 415],
    ['a string id', fern('403'), 400],
    ['headers that fit the gateway, not the service (16 KiB with what the gateway adds)', fern(404, big), 431],
    [otherMethod('/plants'), wholeRequest(otherMethod('/plants'), PLANTS), 405, { allow: new RegExp(`^${allow}$`) }],
    ['a malformed UTF-8 escape', get(`${GATEWAY_PREFIX}/docs/%C0`), 400],
  ]
  for (const [what, raw, status, headers = {}] of cases) {
    const response = await send(gateway, raw)
    errorBody(t, response, status, raw.startsWith('POST ') ? what : undefined)
    t.match(response.headers, headers, `${what}: its headers`)
    t.equal((await gateway.accessEntry(response)).upstreamStatus, String(status), `${what}: answered by a replica`)
  }
})

t.test("the client's address reaches the replicas' logs; an X-Forwarded-For the client sends does not", async (t) => {
  const spoofed = {
    ...AUTHORIZED,
    'X-Forwarded-For': '203.0.113.7',
    'X-Real-IP': '203.0.113.7',
    Forwarded: 'for=203.0.113.7',
  }
  for (const client of ['127.0.0.2', '127.0.0.3']) {
    const response = await send(gateway, fern(100 + Number(client.at(-1)), spoofed), client)
    t.equal(response.statusCode, 200)
    t.equal((await gateway.accessEntry(response)).client, client, `${client}: in the gateway's log`)
    const { line, replica } = await requestLine(replicas, response.headers['x-request-id']!)
    t.equal(line.req?.remoteAddress, client, `${client}: in the log of ${replica.name}, with the gateway's request id`)
  }

  // A peer on the bridge that is not the gateway is not believed.
  const [from, to] = replicas as [Replica, Replica]
  const script = `fetch('http://${to.address}:3000/plants', { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7' }, body: '{"id":102,"name":"Calathea"}' })
    .then((response) => process.stdout.write(response.status + ' ' + response.headers.get('x-request-id')))`
  const [status, requestId] = (await podman(['exec', from.name, 'node', '-e', script])).split(' ')
  t.equal(status, '401', 'another container, without a token: 401')
  const { line } = await requestLine([to], requestId!)
  t.equal(line.req?.remoteAddress, from.address, 'its own address is logged, not the X-Forwarded-For it sent')
})

t.test(
  'a body up to BODY_LIMIT reaches a replica; a larger one is 413 with the Error body from the gateway, before ' +
    'authentication',
  async (t) => {
    const fits = await send(gateway, post(bodyOf(bodyLimit, 200), AUTHORIZED))
    t.equal(fits.statusCode, 200, `${bodyLimit} bytes are stored`)
    t.equal((await gateway.accessEntry(fits)).upstreamStatus, '200')

    const tooLarge = bodyOf(bodyLimit + 1, 201)
    const chunked =
      `${requestHead('POST', PLANTS, AUTHORIZED)}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
      `${tooLarge.length.toString(16)}\r\n${tooLarge}\r\n0\r\n\r\n`
    const requests = {
      'with a token': post(tooLarge, AUTHORIZED),
      'without a token': post(tooLarge, { 'Content-Type': 'application/json' }),
      'chunked, without Content-Length': chunked,
    }
    for (const [what, raw] of Object.entries(requests)) {
      const response = await send(gateway, raw)
      errorBody(t, response, 413, what)
      t.equal((await gateway.accessEntry(response)).upstream, '', `${what}: answered by the gateway, nothing forwarded`)
    }
    const itself = await direct(replicas[0]!, tooLarge)
    t.equal(itself.statusCode, 413)
    t.equal(itself.body, (await send(gateway, post(tooLarge, AUTHORIZED))).body, "the service's 413 has the same body")
  },
)

t.test(
  "Swagger UI's /docs/static/index.html redirects by a relative Location, so within the gateway's prefix",
  async (t) => {
    const path = `${GATEWAY_PREFIX}/docs/static/index.html`
    const redirect = await send(gateway, get(path))
    t.match(redirect, { statusCode: 302, headers: { location: '../' } })
    const page = await send(gateway, get(new URL(String(redirect.headers.location), `https://gateway${path}`).pathname))
    t.match(page, { statusCode: 200, body: /<title>Swagger UI<\/title>/ })
  },
)

// With and without the slash: unless the URL ends in '/', @fastify/swagger-ui links assets from the service root.
for (const slash of ['/', '']) {
  const [docsPath, screenshot] = [`${GATEWAY_PREFIX}/docs${slash}`, `swagger-ui-gateway${slash ? '' : '-no-slash'}.png`]
  t.test(
    `Swagger UI at ${docsPath} in Chromium: Authorize, Try it out → Execute creates the plant through the gateway`,
    (t) =>
      createsPlantThroughGateway(t, browser, gateway, {
        docsPath,
        token,
        plant: { id: slash ? 4444 : 4545, name: 'Calathea orbifolia', tag: 'shade' },
        screenshot,
      }),
  )
}

t.test(
  'clients cutting every exchange through the gateway at every phase stop neither replica; no token is logged',
  async (t) => {
    const target = { url: gateway.origin, ca: gateway.ca }
    const cut = await cutEveryPhase(target, token, { rounds: 6, concurrency: 8, prefix: GATEWAY_PREFIX })
    t.comment(`${cut.length} exchanges cut`)
    for (const replica of replicas) {
      t.equal(await replica.inspect('{{.State.Running}}'), 'true', `${replica.name} is still running`)
      t.equal((await direct(replica, '{"id":720,"name":"Fern"}')).statusCode, 200, `${replica.name} stores plants`)
    }
    t.equal((await send(gateway, fern(720))).statusCode, 200, 'and the gateway reaches them')
    for (const replica of replicas) {
      const logs = await replica.logs()
      t.match(logs, /"msg":"request completed"/, `${replica.name} logged`)
      t.notMatch(logs, new RegExp(`${token}|${WRONG_TOKEN}`), `${replica.name}: no token, valid or not, in its log`)
    }
  },
)

// Last: it stops the replicas.
t.test(
  'a stopped replica is skipped for the other; with both stopped the gateway answers 502 with the Error body',
  async (t) => {
    const [first, second] = replicas as [Replica, Replica]
    await podman(['stop', first.name])
    for (let id = 700; id < 704; id++) {
      const response = await send(gateway, fern(id))
      const { upstream } = await gateway.accessEntry(response)
      t.equal(response.statusCode, 200, `create ${id}: 200 in ${response.elapsedMs} ms`)
      t.equal(upstream.split(', ').at(-1), second.upstream, `create ${id}: by the live replica (tried: ${upstream})`)
    }
    await podman(['stop', second.name])
    const response = await send(gateway, fern(710))
    errorBody(t, response, 502, '502')
    t.comment(`502 after ${response.elapsedMs} ms`)
  },
)
