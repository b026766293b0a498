/**
 * Rate limits per token and per address (unforgeable); tokens kept out of URLs and logs; load shedding; security
 * headers; CORS. Across replicas: services/redis.
 */
import { randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createApp } from '../../service/app.ts'
import { loadConfig } from '../../service/config.ts'
import { build, freshStore, JSON_HEADERS, logSink, OTHER_TOKEN, testConfig, TOKEN } from '../helpers/app.ts'
import { assertErrorBody, CONTRACT_METHODS, contractViolations } from '../helpers/contract.ts'
import { postPlant, type PostOptions } from '../helpers/post-plant.ts'

const WRONG = 'wrong-token-0123456789abcdef'

/** A request from `address` (a gateway's with `forwardedFor`) with `token` and `origin`. */
const from = (address: string, token?: string, forwardedFor?: string, origin?: string): PostOptions => ({
  from: address,
  headers: {
    'content-type': 'application/json',
    authorization: token && `Bearer ${token}`,
    'x-forwarded-for': forwardedFor,
    origin,
  },
})

const send = (app: FastifyInstance, request: PostOptions) =>
  postPlant(app, { id: randomInt(1, 2 ** 40), name: 'Ficus' }, request)

async function statuses(app: FastifyInstance, requests: PostOptions[]) {
  const answered = []
  for (const request of requests) answered.push((await send(app, request)).statusCode)
  return answered
}

const loggedAddresses = (lines: Array<Record<string, unknown>>) =>
  lines
    .filter((line) => line.msg === 'request completed')
    .map((line) => (line.req as { remoteAddress: string }).remoteAddress)

t.test('each token has its own budget; past it, 429 with Retry-After; authentication comes first', async (t) => {
  const app = await build(t, { rateLimitMax: 2, rateLimitWindowMs: 60000 })
  const mine = from('192.0.2.1', TOKEN)
  const first = await send(app, mine)
  t.match(first, { statusCode: 200, headers: { 'x-ratelimit-remaining': undefined } }, 'no budget headers')
  t.equal((await send(app, mine)).statusCode, 200)
  const limited = await send(app, mine)
  t.equal(limited.statusCode, 429)
  t.match(limited.headers, { 'retry-after': /^\d+$/, 'x-ratelimit-limit': '2' })
  t.same(
    await statuses(app, [from('192.0.2.1', OTHER_TOKEN), from('192.0.2.1', 'not-a-valid-token-at-all')]),
    [200, 401],
    'another token is not limited; a wrong one is 401',
  )
})

t.test(
  'failed authentications per address: past the budget 429, no challenge; a valid token never refused',
  async (t) => {
    const app = await build(t, { authFailureLimitMax: 3, authFailureLimitWindowMs: 60000, rateLimitMax: 3 })
    const at7 = (token: string | undefined) => from('198.51.100.7', token)
    t.same(await statuses(app, [at7(WRONG), at7(undefined), at7('x')]), [401, 401, 401], 'wrong, missing, malformed')
    const limited = await send(app, at7(WRONG))
    t.match([limited.statusCode, limited.headers['www-authenticate']], [429, undefined], '"wait", not "authenticate"')
    t.equal((await send(app, from('198.51.100.8', WRONG))).statusCode, 401, 'another address has its own budget')
    t.same(
      await statuses(app, [TOKEN, WRONG, TOKEN, TOKEN, TOKEN].map(at7)),
      [200, 429, 200, 200, 429],
      'the right token served between the failures, until its own budget is spent',
    )
    t.match(
      (await send(app, at7(TOKEN))).json(),
      { error: 429, message: /^Rate limit exceeded/ },
      'that 429 is the per-token limit',
    )
    t.equal((await send(app, at7(OTHER_TOKEN))).statusCode, 200, 'another token from there is served')
  },
)

t.test('IPv6 clients share a failure budget per /56 network, not per /64', async (t) => {
  const app = await build(t, { authFailureLimitMax: 1 })
  const addresses = ['2001:db8:0:1::1', '2001:db8:0:2::1', '2001:db8:0:ff:ffff::1', '2001:db8:0:100::1']
  t.same(
    await statuses(
      app,
      addresses.map((a) => from(a, WRONG)),
    ),
    [401, 429, 429, 401],
    'the next /56 has its own',
  )
})

t.test('a flood of new addresses does not reset the count of a known offender', async (t) => {
  const app = await build(t, { authFailureLimitMax: 3 })
  const twice = Array<PostOptions>(2).fill(from('198.51.100.66', WRONG))
  t.same(await statuses(app, twice), [401, 401])
  // More new addresses than the store keeps (5,000).
  for (let batch = 0; batch < 60; batch++) {
    const flood = await Promise.all(
      Array.from({ length: 100 }, (_, i) => send(app, from(`10.${batch}.${i >> 8}.${i & 255}`, WRONG))),
    )
    if (flood.some((response) => response.statusCode !== 401)) t.fail('a flood request was not 401')
  }
  t.same(await statuses(app, twice), [401, 429], 'the third failure counted as the third')
})

t.test(
  'behind a trusted gateway the forwarded address is the key if an IP; untrusted, all clients are the gateway',
  async (t) => {
    const gateway = '10.0.0.2'
    const via = (forwarded: string, token = WRONG) => from(gateway, token, forwarded)
    const { logger, lines } = logSink()
    const trusting = await build(t, { authFailureLimitMax: 1, trustProxy: true }, logger)
    const clients = ['203.0.113.1', '203.0.113.1', '203.0.113.2']
    t.same(
      await statuses(
        trusting,
        clients.map((a) => via(a)),
      ),
      [401, 429, 401],
      'each client its own budget',
    )
    t.equal((await send(trusting, via('203.0.113.1', TOKEN))).statusCode, 200, 'locked out, the right token is served')
    t.equal((await send(trusting, via('198.51.100.001'))).statusCode, 401, 'junk counts as the gateway')
    const forged = [
      '0xc6.51.100.1',
      '3325256705',
      '198.51.100.1:1234',
      '[2001:db8::1]:80',
      'not-an-ip',
      `203.0.113.1${'x'.repeat(7000)}`,
      '203.0.113.9, junk, 10.0.0.3',
    ]
    t.same(
      await statuses(
        trusting,
        forged.map((f) => via(f)),
      ),
      [...Array(forged.length - 1).fill(429), 401],
      "the gateway's budget, spent; the hop before junk is the client",
    )
    t.same(
      [...new Set(loggedAddresses(lines.splice(0)).slice(4))],
      [gateway, '10.0.0.3'],
      'logged as the last valid hop, never as given',
    )
    t.same(await statuses(trusting, [via('::ffff:198.51.100.9'), via('198.51.100.9')]), [401, 429], 'two spellings')
    t.same(await statuses(trusting, [via('2001:DB8:0:0:0:0:0:1'), via('2001:db8::1')]), [401, 429])
    t.same(loggedAddresses(lines).slice(2), ['2001:db8::1', '2001:db8::1'], 'IPv6 in its RFC 5952 form')
    const untrusting = await build(t, { authFailureLimitMax: 1 })
    t.same(
      await statuses(untrusting, [via('203.0.113.1'), via('203.0.113.2'), via('203.0.113.3', TOKEN)]),
      [401, 429, 200],
    )
  },
)

t.test('the failure limit off, or Redis unreachable (fail open): failures stay 401, none counted', async (t) => {
  const off = await build(t, { authFailureLimitMax: 0, rateLimitMax: 100 })
  const failures = Array<PostOptions>(30).fill(from('192.0.2.9', WRONG))
  t.same(await statuses(off, failures), Array(30).fill(401))
  const { logger, lines } = logSink()
  const redisDown = await build(
    t,
    { rateLimitMax: 1, rateLimitWindowMs: 60000, authFailureLimitMax: 1, rateLimitRedisUrl: 'redis://127.0.0.1:1' },
    logger,
  )
  t.same(
    await statuses(
      redisDown,
      [TOKEN, TOKEN, WRONG, WRONG].map((k) => from('192.0.2.3', k)),
    ),
    [200, 200, 401, 401],
  )
  const outage = lines.filter((line) => /^Redis/.test(String(line.msg)))
  t.match(outage, [{ level: 40, err: { message: /ECONNREFUSED/ } }], 'logged once, at warn')
  t.equal(outage.length, 1)
})

t.test(
  'a bearer token in the query of an operation is 400 invalid_request; no log line holds it (RFC 6750 §2.3)',
  async (t) => {
    const { logger, lines } = logSink()
    const app = await build(t, {}, logger)
    for (const headers of [{ 'content-type': 'application/json' }, JSON_HEADERS]) {
      const response = await app.inject({
        method: 'POST',
        url: `/plants?access_token=${TOKEN}`,
        headers,
        payload: { id: 1, name: 'Ficus' },
      })
      assertErrorBody(t, response, 400)
      t.match(response.json(), { message: /^invalid_request: send the bearer token in the Authorization header/ })
      t.equal(response.headers['www-authenticate'], 'Bearer realm="plant-store", error="invalid_request"')
    }
    const probe = await app.inject({ url: `/health/live?access_token=${TOKEN}` })
    t.equal(probe.statusCode, 200, 'a route without a security scheme reads no token')
    t.ok(lines.filter((line) => line.msg === 'request completed').length > 0, 'requests were logged')
    t.notMatch(JSON.stringify(lines), TOKEN, 'the token is in no log line')
  },
)

/** Blocks the event loop for `ms` milliseconds. */
function stall(ms: number) {
  for (const until = performance.now() + ms; performance.now() < until;);
}

t.test('under event-loop pressure: 503 with Retry-After; liveness and metrics still answer', async (t) => {
  const app = await build(t, { loadShedMaxEventLoopDelayMs: 1 })
  let shed
  // A deadline: the first two seconds after ready are not read as overload.
  for (let attempt = 0, deadline = Date.now() + 30000; shed === undefined && Date.now() < deadline; attempt++) {
    stall(60)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const response = await postPlant(app, { id: attempt, name: 'x' })
    if (response.statusCode === 503) shed = response
  }
  t.match(shed, { headers: { 'retry-after': '1' } }, 'a request was shed')
  t.same(shed!.json(), { error: 503, message: 'The service is overloaded; retry later' })
  t.same(contractViolations(shed!), [])
  stall(60)
  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200)
  stall(60)
  const metrics = await app.inject({ url: '/metrics' })
  t.match(metrics, {
    statusCode: 200,
    body: /^http_request_duration_seconds_count\{method="POST",route="\/plants",status_code="503"\} \d+$/m,
  })
})

t.test('a stall while the service starts is not overload: the first request is served', async (t) => {
  const threshold = loadConfig({}).loadShedMaxEventLoopDelayMs
  // createApp reads this twice, the second time after load shedding is registered: that read stalls.
  const base = testConfig({ loadShedMaxEventLoopDelayMs: threshold })
  let reads = 0
  const app = await createApp({
    ...base,
    ...(await freshStore(t)),
    get groupCommitMaxBatch() {
      if (reads++ > 0) stall(3000)
      return base.groupCommitMaxBatch
    },
  })
  t.teardown(() => app.close())
  t.equal((await postPlant(app, { id: 1, name: 'x' })).statusCode, 200)
})

t.test('security headers on every response, with a policy Swagger UI works under', async (t) => {
  const app = await build(t)
  const policy = (await app.inject({ url: '/docs/static/index.html' })).headers['content-security-policy'] as string
  t.match(policy, /default-src 'self'.*frame-ancestors 'none'/)
  t.notMatch(policy, /upgrade-insecure-requests/, 'plain HTTP behind a gateway keeps working')
  const api = await send(app, from('192.0.2.1', TOKEN))
  t.match(api.headers, {
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    'cache-control': 'no-store',
    'strict-transport-security': /^max-age=\d+/,
  })
  const rejected = await postPlant(app, { id: 1 })
  t.equal(rejected.statusCode, 400)
  t.equal(rejected.headers['x-content-type-options'], 'nosniff', 'errors of the operation too')
})

t.test('CORS: off by default (a preflight is 405); on for configured origins', async (t) => {
  const origin = 'https://ui.example'
  const request = {
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'authorization,content-type',
  }
  const preflight = { method: 'OPTIONS', url: '/plants', headers: { origin, ...request } } as const
  const fromOrigin = (origin: string) => from('192.0.2.1', TOKEN, undefined, origin)
  const off = await build(t)
  const none = { 'access-control-allow-origin': undefined }
  t.match(await send(off, fromOrigin(origin)), { statusCode: 200, headers: none })
  t.match(await off.inject(preflight), { statusCode: 405, headers: none })
  const on = await build(t, { corsOrigins: [origin] })
  const allowed = await on.inject(preflight)
  t.match(allowed, {
    statusCode: 204,
    headers: { 'access-control-allow-origin': origin, 'access-control-allow-headers': /authorization/ },
  })
  t.equal(allowed.headers['access-control-allow-methods'], CONTRACT_METHODS.join(', '), "the contract's methods")
  t.equal((await send(on, fromOrigin(origin))).headers['access-control-allow-origin'], origin)
  const other = await send(on, fromOrigin('https://evil.example'))
  t.match(other, { statusCode: 200, headers: none }, 'another origin is served (CORS binds browsers), not allowed')
})
