/**
 * Limits shared by replicas through Redis (`RATE_LIMIT_REDIS_URL`): one budget per
 * token, and one failed-authentication budget per client address, whichever replica
 * a request reaches. Needs Redis (`TEST_REDIS_URL`, which `npm run test:services`
 * starts); the limits of one replica, and Redis unreachable, are in
 * `test/contract/protection.test.ts`.
 *
 * @module
 */
import { randomBytes, randomInt } from 'node:crypto'
import t from 'tap'
import { build, TOKEN } from '../helpers/app.js'
import { requires, TEST_REDIS_URL } from '../helpers/needs.js'

const WRONG = 'wrong-token-0123456789abcdef'

/** A create with `token`, or a failed authentication from `address`. */
const create = (token: string, id: number, address = '127.0.0.1') => ({
  method: 'POST' as const,
  url: '/plants',
  remoteAddress: address,
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  payload: { id, name: 'Ficus' },
})

t.test('with Redis, replicas share one budget per token', requires('redis'), async (t) => {
  const token = `shared-${randomBytes(16).toString('hex')}`
  const config = { tokens: [token], rateLimitMax: 3, rateLimitWindowMs: 60000, rateLimitRedisUrl: TEST_REDIS_URL }
  const [a, b] = [await build(t, config), await build(t, config)]
  const statuses = []
  for (const [i, app] of [a, b, a, b].entries()) statuses.push((await app!.inject(create(token, i))).statusCode)
  t.same(statuses, [200, 200, 200, 429])
})

t.test('with Redis, replicas share one failure budget per address', requires('redis'), async (t) => {
  const address = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
  const config = { authFailureLimitMax: 2, rateLimitRedisUrl: TEST_REDIS_URL }
  const [a, b] = [await build(t, config), await build(t, config)]
  const answered = []
  for (const app of [a, b, a, b]) answered.push((await app!.inject(create(WRONG, randomInt(1, 2 ** 40), address))).statusCode)
  t.same(answered, [401, 401, 429, 429])
  t.equal((await b!.inject(create(TOKEN, randomInt(1, 2 ** 40), address))).statusCode, 200)
})
