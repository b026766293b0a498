/**
 * Limits shared by replicas through Redis (`RATE_LIMIT_REDIS_URL`, `TEST_REDIS_URL`): one
 * budget per token and one failed-authentication budget per client address, whichever
 * replica a request reaches. One replica's limits: `test/app/protection.test.ts`.
 *
 * @module
 */
import { randomBytes, randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build, TOKEN } from '../helpers/app.ts'
import { requires, TEST_REDIS_URL } from '../helpers/needs.ts'
import { postPlant } from '../helpers/post-plant.ts'

/** Creates on two apps sharing Redis, alternately (a, b, a, b), with `token` from `address`; @returns the statuses. */
async function alternately(
  t: Parameters<typeof build>[0],
  config: Parameters<typeof build>[1],
  token: string,
  address: string,
): Promise<number[]> {
  const [a, b] = [await build(t, config), await build(t, config)]
  const create = (app: FastifyInstance) =>
    postPlant(
      app,
      { id: randomInt(1, 2 ** 40), name: 'Ficus' },
      { from: address, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
    )
  const statuses = []
  for (const app of [a, b, a, b]) statuses.push((await create(app)).statusCode)
  return statuses
}

t.test('with Redis, replicas share one budget per token', requires('redis'), async (t) => {
  const token = `shared-${randomBytes(16).toString('hex')}`
  t.same(
    await alternately(
      t,
      { tokens: [token], rateLimitMax: 3, rateLimitWindowMs: 60000, rateLimitRedisUrl: TEST_REDIS_URL },
      token,
      '127.0.0.1',
    ),
    [200, 200, 200, 429],
  )
})

t.test(
  'with Redis, replicas share one failure budget per address; a valid token is still served',
  requires('redis'),
  async (t) => {
    const address = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
    const config = { authFailureLimitMax: 2, rateLimitRedisUrl: TEST_REDIS_URL }
    t.same(await alternately(t, config, 'wrong-token-0123456789abcdef', address), [401, 401, 429, 429])
    t.same(await alternately(t, config, TOKEN, address), [200, 200, 200, 200])
  },
)
