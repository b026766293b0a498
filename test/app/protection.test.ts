/**
 * Limits and headers: per-token rate limit (429, RFC 6585 §4); the
 * failed-authentication limit per client address (OWASP API2:2023, API4:2023);
 * load shedding (503); security headers; CORS. Shared across replicas through
 * Redis: `test/services/redis.test.ts`.
 */
import { randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createApp } from '../../service/app.js'
import { loadConfig } from '../../service/config.js'
import { build, freshStore, OTHER_TOKEN, testConfig, TOKEN } from '../helpers/app.js'
import { CONTRACT_METHODS, contractViolations } from '../helpers/contract.js'
import { postPlant, type PostOptions } from '../helpers/post-plant.js'

/** Headers of a JSON request with `token`. */
const bearer = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })

/** Creates plant `id` with `token`. */
const create = (app: FastifyInstance, token: string, id: number) => postPlant(app, { id, name: 'Ficus' }, { headers: bearer(token) })

t.test('each token has its own budget; past it, 429 with Retry-After and the Error body', async (t) => {
  const app = await build(t, { rateLimitMax: 2, rateLimitWindowMs: 60000 })
  const first = await create(app, TOKEN, 1)
  t.equal(first.statusCode, 200)
  t.equal(first.headers['x-ratelimit-remaining'], undefined, 'no budget headers on success')
  t.equal((await create(app, TOKEN, 2)).statusCode, 200)
  const limited = await create(app, TOKEN, 3)
  t.equal(limited.statusCode, 429)
  t.match(limited.headers['retry-after'], /^\d+$/)
  t.equal(limited.headers['x-ratelimit-limit'], '2')
  t.same(contractViolations(limited), [])
  t.equal(limited.json().error, 429)
  t.equal((await create(app, OTHER_TOKEN, 3)).statusCode, 200, 'another token is not limited')
  const unauthenticated = await create(app, 'not-a-valid-token-at-all', 4)
  t.equal(unauthenticated.statusCode, 401, 'authentication comes first')
})

/** A request of `address` (the socket's, or the gateway's with `forwardedFor`) with `token` (none when undefined). */
function from(address: string, token: string | undefined, forwardedFor?: string): PostOptions {
  return {
    from: address,
    headers: { 'content-type': 'application/json', authorization: token === undefined ? undefined : `Bearer ${token}`, 'x-forwarded-for': forwardedFor },
  }
}

/** Creates a plant of a new id, sent as `request` says. */
const send = (app: FastifyInstance, request: PostOptions) => postPlant(app, { id: randomInt(1, 2 ** 40), name: 'Ficus' }, request)

const WRONG = 'wrong-token-0123456789abcdef'

/** Statuses of the requests, sent one after the other. */
async function statuses(app: FastifyInstance, requests: PostOptions[]): Promise<number[]> {
  const answered = []
  for (const request of requests) answered.push((await send(app, request)).statusCode)
  return answered
}

t.test('failed authentications per address: past the budget 429 with Retry-After and the Error body; the next window starts afresh', async (t) => {
  const app = await build(t, { authFailureLimitMax: 3, authFailureLimitWindowMs: 60000 })
  const guesses = await statuses(app, [from('198.51.100.7', WRONG), from('198.51.100.7', undefined), from('198.51.100.7', 'x')])
  t.same(guesses, [401, 401, 401], 'wrong, missing and malformed tokens are answered 401 within the budget')
  const limited = await send(app, from('198.51.100.7', WRONG))
  t.equal(limited.statusCode, 429)
  t.same(contractViolations(limited), [])
  t.match(limited.json(), { error: 429, message: /^Too many failed authentications from this address; retry in \d+ seconds$/ })
  const retryAfter = Number(limited.headers['retry-after'])
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter} s, within the window`)
  t.equal(limited.headers['www-authenticate'], undefined, 'no challenge: the answer is "wait", not "authenticate"')
  t.equal((await send(app, from('198.51.100.8', WRONG))).statusCode, 401, 'another address has its own budget')
})

t.test('a valid token is never refused by the failure limit, even from an address past it; only by its own per-token limit', async (t) => {
  const app = await build(t, { authFailureLimitMax: 2, rateLimitMax: 3 })
  t.same(await statuses(app, [from('192.0.2.1', WRONG), from('192.0.2.1', WRONG), from('192.0.2.1', WRONG)]), [401, 401, 429])
  t.same(
    await statuses(app, [from('192.0.2.1', TOKEN), from('192.0.2.1', WRONG), from('192.0.2.1', TOKEN), from('192.0.2.1', TOKEN), from('192.0.2.1', TOKEN)]),
    [200, 429, 200, 200, 429],
    'the right token is served between the failures, until its own budget of 3 is spent',
  )
  const tokenLimited = await send(app, from('192.0.2.1', TOKEN))
  t.match(tokenLimited.json(), { error: 429, message: /^Rate limit exceeded/ }, 'that 429 is the per-token limit')
  t.equal((await send(app, from('192.0.2.1', OTHER_TOKEN))).statusCode, 200, 'and another token from the same address is served')
})

t.test('behind a trusted gateway the client address it forwards is the key; untrusted, every client is the gateway', async (t) => {
  const gateway = '10.0.0.2'
  const trusting = await build(t, { authFailureLimitMax: 1, trustProxy: [gateway] })
  t.same(
    await statuses(trusting, [from(gateway, WRONG, '203.0.113.1'), from(gateway, WRONG, '203.0.113.1'), from(gateway, WRONG, '203.0.113.2')]),
    [401, 429, 401],
    'clients behind one gateway: each has its own budget',
  )
  t.equal((await send(trusting, from(gateway, TOKEN, '203.0.113.1'))).statusCode, 200, 'the locked-out client address with the right token is served')
  const untrusting = await build(t, { authFailureLimitMax: 1 })
  t.same(
    await statuses(untrusting, [from(gateway, WRONG, '203.0.113.1'), from(gateway, WRONG, '203.0.113.2')]),
    [401, 429],
    'without TRUST_PROXY, X-Forwarded-For is not believed: one budget for the gateway',
  )
  t.equal((await send(untrusting, from(gateway, TOKEN, '203.0.113.3'))).statusCode, 200, 'a client with the right token behind it is still served')
})

t.test('the failure limit off (AUTH_FAILURE_LIMIT_MAX=0): failures stay 401', async (t) => {
  const app = await build(t, { authFailureLimitMax: 0, rateLimitMax: 100 })
  t.same(await statuses(app, Array.from({ length: 30 }, () => from('192.0.2.9', WRONG))), Array(30).fill(401))
})

t.test('Redis unreachable: requests are served (fail open), not refused', async (t) => {
  const app = await build(t, { rateLimitMax: 1, rateLimitWindowMs: 60000, authFailureLimitMax: 1, rateLimitRedisUrl: 'redis://127.0.0.1:1' })
  t.equal((await create(app, TOKEN, 1)).statusCode, 200)
  t.equal((await create(app, TOKEN, 2)).statusCode, 200, 'no budget is counted')
  t.same(await statuses(app, [from('192.0.2.3', WRONG), from('192.0.2.3', WRONG)]), [401, 401], 'failures are not counted either')
})

/** Blocks the event loop of this process for `ms` milliseconds (a stall, as under-pressure sees one). */
function stall(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until);
}

t.test('under event-loop pressure: 503 with Retry-After and the Error body; liveness still answers', async (t) => {
  const app = await build(t, { loadShedMaxEventLoopDelayMs: 1 })
  let shed
  // Bounded by a deadline, not a count: the samples of the first two seconds after
  // ready are not read as overload (next test), however slow the machine is.
  const deadline = Date.now() + 30000
  for (let attempt = 0; shed === undefined && Date.now() < deadline; attempt++) {
    stall(60)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const response = await postPlant(app, { id: attempt, name: 'x' })
    if (response.statusCode === 503) shed = response
  }
  t.ok(shed, 'a request was shed')
  t.equal(shed!.headers['retry-after'], '1')
  t.same(shed!.json(), { error: 503, message: 'The service is overloaded; retry later' })
  t.same(contractViolations(shed!), [])
  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200)
})

t.test('a stall while the service starts is not overload: the first request after a slow start is served', async (t) => {
  // The default threshold: an interval with no sample at all reads as an infinite delay.
  const threshold = loadConfig({}).loadShedMaxEventLoopDelayMs
  // A slow start, for real: createApp reads this setting once while it copies the
  // configuration (before load shedding is registered) and once more while it builds
  // the routes; that second read blocks the event loop for three sample intervals.
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
  const response = await postPlant(app, { id: 1, name: 'x' })
  t.equal(response.statusCode, 200)
  t.comment(`event-loop delay sampled at the first request: ${Math.round(app.memoryUsage().eventLoopDelay)} ms (threshold ${threshold} ms)`)
})

t.test('security headers on every response, with a policy Swagger UI works under', async (t) => {
  const app = await build(t)
  const docs = await app.inject({ url: '/docs/static/index.html' })
  const policy = docs.headers['content-security-policy'] as string
  t.match(policy, /default-src 'self'/)
  t.match(policy, /frame-ancestors 'none'/)
  t.notMatch(policy, /upgrade-insecure-requests/, 'plain HTTP behind a gateway keeps working')
  const api = await create(app, TOKEN, 1)
  t.equal(api.headers['x-content-type-options'], 'nosniff')
  t.equal(api.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'")
  t.equal(api.headers['cache-control'], 'no-store')
  t.match(api.headers['strict-transport-security'], /^max-age=\d+/)
  const rejected = await postPlant(app, { id: 1 }, { headers: bearer(TOKEN) })
  t.equal(rejected.statusCode, 400)
  t.equal(rejected.headers['x-content-type-options'], 'nosniff', 'errors of the operation too')
})

t.test('CORS is off by default', async (t) => {
  const app = await build(t)
  const response = await postPlant(app, { id: 1, name: 'Ficus' }, { headers: { ...bearer(TOKEN), origin: 'https://ui.example' } })
  t.equal(response.statusCode, 200, 'served')
  t.equal(response.headers['access-control-allow-origin'], undefined, 'without an Access-Control-Allow-Origin')
  const preflight = await app.inject({ method: 'OPTIONS', url: '/plants', headers: { origin: 'https://ui.example', 'access-control-request-method': 'POST' } })
  t.equal(preflight.statusCode, 405, 'a preflight is an OPTIONS like any other: 405')
  t.equal(preflight.headers['access-control-allow-origin'], undefined)
})

t.test('CORS for configured origins: preflight and actual requests', async (t) => {
  const app = await build(t, { corsOrigins: ['https://ui.example'] })
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/plants',
    headers: { origin: 'https://ui.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'https://ui.example')
  t.match(preflight.headers['access-control-allow-headers'], /authorization/)
  t.equal(preflight.headers['access-control-allow-methods'], CONTRACT_METHODS.join(', '), "the contract's methods")
  const actual = await postPlant(app, { id: 1, name: 'Ficus' }, { headers: { ...bearer(TOKEN), origin: 'https://ui.example' } })
  t.equal(actual.statusCode, 200)
  t.equal(actual.headers['access-control-allow-origin'], 'https://ui.example')
  const other = await postPlant(app, { id: 2, name: 'Ficus' }, { headers: { ...bearer(TOKEN), origin: 'https://evil.example' } })
  t.equal(other.statusCode, 200, 'another origin is served (CORS binds browsers, not the service)')
  t.equal(other.headers['access-control-allow-origin'], undefined, 'without its origin allowed')
})
