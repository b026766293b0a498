/**
 * Limits shared by replicas through Redis (`RATE_LIMIT_REDIS_URL`): one budget per
 * token, and one failed-authentication budget per client address, whichever replica
 * a request reaches. Needs Redis (`TEST_REDIS_URL`, which `npm run test:services`
 * starts); the limits of one replica, and Redis unreachable, are in
 * `test/app/protection.test.ts`.
 *
 * @module
 */
import { randomBytes, randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build, TOKEN } from '../helpers/app.js'
import { requires, TEST_REDIS_URL } from '../helpers/needs.js'
import { postPlant } from '../helpers/post-plant.js'

const WRONG = 'wrong-token-0123456789abcdef'

/** A create on `app` with `token`, or a failed authentication from `address`. */
const create = (app: FastifyInstance, token: string, id: number, address = '127.0.0.1') =>
  postPlant(app, { id, name: 'Ficus' }, { from: address, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })

t.test('with Redis, replicas share one budget per token', requires('redis'), async (t) => {
  const token = `shared-${randomBytes(16).toString('hex')}`
  const config = { tokens: [token], rateLimitMax: 3, rateLimitWindowMs: 60000, rateLimitRedisUrl: TEST_REDIS_URL }
  const [a, b] = [await build(t, config), await build(t, config)]
  const statuses = []
  for (const [i, app] of [a, b, a, b].entries()) statuses.push((await create(app!, token, i)).statusCode)
  t.same(statuses, [200, 200, 200, 429])
})

t.test('with Redis, replicas share one failure budget per address', requires('redis'), async (t) => {
  const address = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
  const config = { authFailureLimitMax: 2, rateLimitRedisUrl: TEST_REDIS_URL }
  const [a, b] = [await build(t, config), await build(t, config)]
  const answered = []
  for (const app of [a, b, a, b]) answered.push((await create(app!, WRONG, randomInt(1, 2 ** 40), address)).statusCode)
  t.same(answered, [401, 401, 429, 429])
  t.equal((await create(b!, TOKEN, randomInt(1, 2 ** 40), address)).statusCode, 200)
})
