/**
 * Limits and headers: per-token rate limit (429, RFC 6585 §4), shared across
 * replicas through Redis; load shedding (503); security headers; CORS.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { build, contractViolations, JSON_HEADERS, OTHER_TOKEN, TOKEN } from './helper.js'

const create = (token: string, id: number) => ({
  method: 'POST' as const,
  url: '/plants',
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  payload: { id, name: 'Ficus' },
})

t.test('each token has its own budget; past it, 429 with Retry-After and the Error body', async (t) => {
  const app = await build(t, { rateLimitMax: 2, rateLimitWindowMs: 60000 })
  const first = await app.inject(create(TOKEN, 1))
  t.equal(first.statusCode, 200)
  t.equal(first.headers['x-ratelimit-remaining'], undefined, 'no budget headers on success')
  t.equal((await app.inject(create(TOKEN, 2))).statusCode, 200)
  const limited = await app.inject(create(TOKEN, 3))
  t.equal(limited.statusCode, 429)
  t.match(limited.headers['retry-after'], /^\d+$/)
  t.equal(limited.headers['x-ratelimit-limit'], '2')
  t.same(contractViolations(limited), [])
  t.equal(limited.json().error, 429)
  t.equal((await app.inject(create(OTHER_TOKEN, 3))).statusCode, 200, 'another token is not limited')
  const unauthenticated = await app.inject({ ...create('not-a-valid-token-at-all', 4) })
  t.equal(unauthenticated.statusCode, 401, 'authentication comes first')
})

t.test('with Redis, replicas share one budget per token', async (t) => {
  const token = `shared-${randomBytes(12).toString('hex')}`
  const config = { tokens: [token], rateLimitMax: 3, rateLimitWindowMs: 60000, rateLimitRedisUrl: 'redis://127.0.0.1:6379' }
  const [a, b] = [await build(t, config), await build(t, config)]
  const statuses = []
  for (const [i, app] of [a, b, a, b].entries()) statuses.push((await app!.inject(create(token, i))).statusCode)
  t.same(statuses, [200, 200, 200, 429])
})

t.test('Redis unreachable: requests are served (fail open), not refused', async (t) => {
  const app = await build(t, { rateLimitMax: 1, rateLimitWindowMs: 60000, rateLimitRedisUrl: 'redis://127.0.0.1:1' })
  t.equal((await app.inject(create(TOKEN, 1))).statusCode, 200)
})

t.test('under event-loop pressure: 503 with Retry-After and the Error body; liveness still answers', async (t) => {
  const app = await build(t, { loadShedMaxEventLoopDelayMs: 1 })
  let shed
  for (let attempt = 0; attempt < 50 && shed === undefined; attempt++) {
    const until = Date.now() + 60
    while (Date.now() < until); // block the event loop
    await new Promise((resolve) => setTimeout(resolve, 20))
    const response = await app.inject({ method: 'POST', url: '/plants', headers: JSON_HEADERS, payload: { id: attempt, name: 'x' } })
    if (response.statusCode === 503) shed = response
  }
  t.ok(shed, 'a request was shed')
  t.equal(shed!.headers['retry-after'], '1')
  t.same(shed!.json(), { error: 503, message: 'The service is overloaded; retry later' })
  t.same(contractViolations(shed!), [])
  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200)
})

t.test('security headers on every response, with a policy Swagger UI works under', async (t) => {
  const app = await build(t)
  const docs = await app.inject({ url: '/docs/static/index.html' })
  const policy = docs.headers['content-security-policy'] as string
  t.match(policy, /default-src 'self'/)
  t.match(policy, /frame-ancestors 'none'/)
  t.notMatch(policy, /upgrade-insecure-requests/, 'plain HTTP behind a gateway keeps working')
  const api = await app.inject(create(TOKEN, 1))
  t.equal(api.headers['x-content-type-options'], 'nosniff')
  t.equal(api.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'")
  t.equal(api.headers['cache-control'], 'no-store')
  t.match(api.headers['strict-transport-security'], /^max-age=\d+/)
  const rejected = await app.inject({ ...create(TOKEN, 1), payload: { id: 1 } })
  t.equal(rejected.statusCode, 400)
  t.equal(rejected.headers['x-content-type-options'], 'nosniff', 'errors of the operation too')
})

t.test('CORS is off by default', async (t) => {
  const app = await build(t)
  const response = await app.inject({ ...create(TOKEN, 1), headers: { ...create(TOKEN, 1).headers, origin: 'https://ui.example' } })
  t.equal(response.headers['access-control-allow-origin'], undefined)
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
  const actual = await app.inject({ ...create(TOKEN, 1), headers: { ...create(TOKEN, 1).headers, origin: 'https://ui.example' } })
  t.equal(actual.headers['access-control-allow-origin'], 'https://ui.example')
  const other = await app.inject({ ...create(TOKEN, 2), headers: { ...create(TOKEN, 2).headers, origin: 'https://evil.example' } })
  t.equal(other.headers['access-control-allow-origin'], undefined)
})
