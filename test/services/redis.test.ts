/**
 * Limits shared by replicas through Redis (`RATE_LIMIT_REDIS_URL`, `TEST_REDIS_URL`): one budget per token, one failure
 * budget per address.
 */
import { randomBytes, randomInt } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { AppConfig } from '../../service/app.ts'
import { build, logSink, TOKEN } from '../helpers/app.ts'
import { requires, TEST_REDIS_URL } from '../helpers/needs.ts'
import { partitionProxy, until } from '../helpers/partition-proxy.ts'
import { postPlant } from '../helpers/post-plant.ts'

/** The status of a create of a new plant with `token`. */
const create = async (app: FastifyInstance, token: string, from?: string) => {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  return (await postPlant(app, { id: randomInt(1, 2 ** 40), name: 'Ficus' }, { from, headers })).statusCode
}

/** Statuses of creates on two apps sharing Redis (a, b, a, b) with `token` from `address`. */
async function alternately(t: Test, config: Partial<AppConfig>, token: string, address = '127.0.0.1') {
  const [a, b] = [await build(t, config), await build(t, config)]
  const statuses = []
  for (const app of [a, b, a, b]) statuses.push(await create(app, token, address))
  return statuses
}

t.test('with Redis, replicas share one budget per token', requires('redis'), async (t) => {
  const token = `shared-${randomBytes(16).toString('hex')}`
  const config = { tokens: [token], rateLimitMax: 3, rateLimitWindowMs: 60000, rateLimitRedisUrl: TEST_REDIS_URL }
  t.same(await alternately(t, config, token), [200, 200, 200, 429])
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

t.test(
  'an outage of Redis is logged once, at warn, however often the client retries; a second outage again',
  requires('redis'),
  async (t) => {
    const { logger, lines } = logSink()
    // A hop to Redis that can go away (connections refused) and come back on the same port.
    const hop = await partitionProxy(t, TEST_REDIS_URL!)
    const tokens = [0, 1, 2].map(() => `outage-${randomBytes(16).toString('hex')}`)
    const app = await build(
      t,
      { tokens, rateLimitMax: 1, rateLimitWindowMs: 60000, rateLimitRedisUrl: hop.url },
      logger,
    )
    /** Redis counts: a token's second request is refused. */
    const counted = async (token: string) => (await create(app, token)) === 429
    const outages = () => lines.filter((line) => /^Redis/.test(String(line.msg)))
    t.ok(await until(() => counted(tokens[0]!), 20_000), 'Redis counts')
    for (const outage of [1, 2]) {
      hop.close()
      t.ok(await until(() => outages().length === outage, 20_000), `outage ${outage}`)
      t.equal(await create(app, tokens[outage]!), 200, 'served meanwhile (fail open)')
      // ioredis retries in the background, refused each time.
      await sleep(1500)
      t.equal(outages().length, outage, 'one line for the outage')
      t.match(outages().at(-1), { level: 40, err: { message: /ECONNREFUSED/ } }, 'at warn')
      await hop.reopen()
      t.ok(await until(() => counted(tokens[outage]!), 20_000), 'Redis is back')
    }
  },
)
