/**
 * The service on `deploy/postgres-ha/` behind the gateway, the primary killed twice under load: back within 30 s, only
 * 200 or 503 meanwhile, every 200 stored once; the old primary rejoins.
 */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { countByStatus, failoverFigures, startLoad } from '../helpers/create-load.ts'
import { startGateway } from '../helpers/nginx.ts'
import { type PatroniNode, startCluster } from '../helpers/postgres-ha.ts'
import { randomToken } from '../helpers/podman.ts'
import { startService } from '../helpers/process.ts'

/** Seconds within which creates succeed again after losing the primary. */
const RECOVERY_LIMIT_S = 30

t.setTimeout(15 * 60_000)

const cluster = await startCluster(t)
const token = randomToken()
const service = await startService(t, {
  PLANT_STORE_TOKENS: token,
  DATABASE_URL: cluster.databaseUrl,
  NODE_ENV: 'test',
  DATA_DIR: join(t.testdir(), 'unused'),
})
const gateway = await startGateway(t, [service])
const created: bigint[] = []
/** Of `created`: how many `node` stores, and how many ids it stores twice. */
const stored = async (node: PatroniNode) =>
  (
    await cluster.queryOn<{ stored: number; twice: number }>(
      node,
      'select count(*) filter (where id = any($1::bigint[]))::int as stored, (count(*) - count(distinct id))::int ' +
        'as twice from plant',
      [created.map(String)],
    )
  )[0]!

/** Load through the gateway, the leader killed after 200 creates. */
async function loseThePrimary(t: Test, firstId: bigint) {
  const load = startLoad(gateway, token, firstId)
  const leader = await cluster.leader()
  let killedAt: number
  try {
    await load.successes(200, 0, 120_000)
    killedAt = performance.now()
    await leader.kill()
    // Not the bound (asserted below): long enough to see how late it comes.
    await load.successes(200, killedAt, (RECOVERY_LIMIT_S + 60) * 1000)
  } finally {
    await load.stop()
  }
  const { outcomes } = load
  const { recoverySeconds, during } = failoverFigures(outcomes, killedAt)
  created.push(...outcomes.filter((outcome) => outcome.status === 200).map((outcome) => outcome.id))
  t.ok(recoverySeconds <= RECOVERY_LIMIT_S, `creates succeed ${recoverySeconds.toFixed(1)} s after the kill (≤ 30 s)`)
  const all = countByStatus(outcomes)
  t.same(
    Object.keys(all).filter((status) => !['200', '503'].includes(status)),
    [],
    `only 200 and 503: ${JSON.stringify(all)}`,
  )
  t.notOk(
    outcomes.some((o) => o.status === 503 && o.retryAfter === undefined),
    'every 503 has Retry-After',
  )
  const next = await cluster.leader()
  t.not(next.name, leader.name, `${next.name} leads now`)
  t.same(
    await stored(next),
    { stored: created.length, twice: 0 },
    `all ${created.length} plants answered 200 are on it, none twice`,
  )
  t.comment(`${leader.name} -> ${next.name}: back after ${recoverySeconds.toFixed(1)} s; ${JSON.stringify(during)}`)
}

await t.test('losing the primary', (t) => loseThePrimary(t, 1_000_000n))
await t.test('the old primary rejoins as Sync Standby when its Patroni starts again, with every plant', async (t) => {
  const leader = await cluster.leader()
  const old = cluster.nodes.find((node) => node !== leader)!
  old.start()
  await t.resolves(
    cluster.waitUntilHealthy(leader, 180_000),
    `${old.name} is Sync Standby with no lag; HAProxy routes to ${leader.name}`,
  )
  t.comment(/running pg_rewind/.test(old.output()) ? 'rewound' : 'no pg_rewind')
  t.equal(
    (await stored(old)).stored,
    created.length,
    `the rejoined standby has all ${created.length} plants answered 200`,
  )
})
await t.test('losing the new primary', (t) => loseThePrimary(t, 2_000_000n))
await service.stop()
