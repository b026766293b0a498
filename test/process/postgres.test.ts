/** PostgreSQL in production shape: replicas on one database, outages, migrations, shutdown under load. */
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { createApp } from '../../service/app.ts'
import { migratedApp, postgresSchema, testConfig } from '../helpers/app.ts'
import { freePort } from '../helpers/machine.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { blockedBy, partitionProxy, until } from '../helpers/partition-proxy.ts'
import { runToExit, serviceEnv, startService } from '../helpers/process.ts'

/** The status of a create sent to `url`; 0 when not answered (refused or reset). */
const statusOf = (url: string, body: object) =>
  postPlant(url, body).then(
    (response) => response.statusCode,
    () => 0,
  )

t.test(
  'two replicas on one database: the same id is stored once; identical content is 200 on both, different content ' +
    'one 200 and 409s',
  async (t) => {
    const { url, client } = await postgresSchema(t)
    const [a, b] = await Promise.all([
      startService(t, serviceEnv(t, { DATABASE_URL: url })),
      startService(t, serviceEnv(t, { DATABASE_URL: url })),
    ])
    const ids = Array.from({ length: 20 }, (_, i) => 7_000_000_000_000_000_000n + BigInt(i))
    const same = await Promise.all(ids.flatMap((id) => [a, b, a, b].map((r) => statusOf(r!.url, { id, name: 'same' }))))
    t.same(same, Array(same.length).fill(200), 'identical content: 200 from both replicas')
    const raced = await Promise.all(
      ids.map((id) => Promise.all([a, b].map((r) => statusOf(r!.url, { id: id + 10n ** 18n, name: r!.url })))),
    )
    const pairs = raced.map((statuses) => statuses.sort().join())
    t.same(pairs, Array(ids.length).fill('200,409'), 'different content: exactly one 200 and one 409 per id')
    const { rows } = await client.query('select count(*)::int as plants, count(distinct id)::int as ids from plant')
    t.same(rows[0], { plants: ids.length * 2, ids: ids.length * 2 }, 'each id stored exactly once')
    await Promise.all([a!.stop(), b!.stop()])
  },
)

t.test(
  'PostgreSQL unreachable: 503 with Retry-After and the Error body, never 200 or 500; recovery without restart, ' +
    'nothing lost or duplicated',
  async (t) => {
    const { url, client } = await postgresSchema(t)
    const proxy = await partitionProxy(t, url)
    // The tight connect timeout is for the outage, not the migration.
    const app = await migratedApp(t, { databaseUrl: proxy.url, databaseConnectTimeoutMs: 300, databasePoolSize: 4 })
    const send = (id: number) => postPlant(app, { id, name: `plant ${id}` }, { t })

    // Connecting may outlast 300 ms on a loaded machine.
    await createRetrying(t, [app], [1, 2, 3, 4, 5])
    proxy.cut()
    const during = await Promise.all([6, 7, 8, 9, 10].map(send))
    t.match(during, Array(5).fill({ statusCode: 503, headers: { 'retry-after': '1' } }), '503 with Retry-After')
    t.equal((await app.inject({ url: '/health/ready' })).statusCode, 503, 'readiness reports the outage')
    proxy.heal()
    await createRetrying(t, [app], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    t.equal((await app.inject({ url: '/health/ready' })).statusCode, 200)
    const { rows } = await client.query('select count(*)::int as plants from plant')
    t.equal(rows[0].plants, 10, 'every plant once')
  },
)

t.test(
  'a standby refusing writes (SQLSTATE 25006, as during a failover): 503 with Retry-After, never 500; that ' +
    'connection is not reused',
  async (t) => {
    const { url, client } = await postgresSchema(t)
    // A database of its own: the read-only default would reach other tests' schemas.
    const database = `standby_${randomBytes(6).toString('hex')}`
    await client.query(`create database ${database}`)
    t.teardown(() => client.query(`drop database ${database} with (force)`))
    const databaseUrl = new URL(url)
    databaseUrl.pathname = `/${database}`
    databaseUrl.search = '' // its schema is public
    const app = await migratedApp(t, { databaseUrl: databaseUrl.toString() })
    const send = (id: number) => postPlant(app, { id, name: `plant ${id}` }, { t })
    await client.query(`alter database ${database} set default_transaction_read_only = on`)
    for (const id of [1, 2])
      t.match(await send(id), { statusCode: 503, headers: { 'retry-after': '1' } }, 'a refused write is 503')
    // Read when a connection starts: one kept would still refuse.
    await client.query(`alter database ${database} reset default_transaction_read_only`)
    t.equal((await send(3)).statusCode, 200, 'the next create gets a connection of its own')
  },
)

t.test(
  'a database that cannot be reached at start stops the start with one line naming the cause, not a stack',
  async (t) => {
    const DATABASE_URL = `postgres://plantstore:s3cret-password@127.0.0.1:${await freePort()}/plants`
    const { code, output } = await runToExit(serviceEnv(t, { DATABASE_URL }))
    t.equal(code, 1)
    t.match(output, /^plant-store: The database cannot be reached: .*ECONNREFUSED.*\n$/)
    t.notMatch(output, 's3cret-password', 'the password in DATABASE_URL is not printed')
  },
)

t.test(
  "a connect timeout shorter than the app's build: the start still succeeds, the migration waits for the build",
  async (t) => {
    const { url, client } = await postgresSchema(t)
    const service = await startService(t, serviceEnv(t, { DATABASE_URL: url, DATABASE_CONNECT_TIMEOUT_MS: '250' }))
    t.equal(await statusOf(service.url, { id: 1, name: 'Fern' }), 200)
    const { rows } = await client.query('select count(*)::int as plants from plant')
    t.equal(rows[0].plants, 1)
    await service.stop()
  },
)

t.test('replicas starting at once on an empty database: one migrates, the others wait, all serve', async (t) => {
  const { url, client } = await postgresSchema(t)
  // Three apps build in one process: one's build holds the event loop the others' connections wait on.
  const config = () => testConfig({ dataDir: t.testdir(), databaseUrl: url, databaseConnectTimeoutMs: 30000 })
  const apps = await Promise.all([1, 2, 3].map(() => createApp(config())))
  t.teardown(() => Promise.all(apps.map((app) => app.close())))
  const { rows } = await client.query('select name from kysely_migration')
  t.same(rows, [{ name: '0001-create-plant' }], 'applied once')
  await createRetrying(t, apps, [0, 1, 2])
  const { rows: plants } = await client.query('select id from plant order by id')
  t.same(plants, [{ id: '0' }, { id: '1' }, { id: '2' }])
})

/** Creates each of `ids` (on `apps` in turn), a 503 retried after its `Retry-After` for 30 s: all stored. */
async function createRetrying(t: Test, apps: FastifyInstance[], ids: number[]) {
  const create = async (id: number, i: number) => {
    const statuses: number[] = []
    for (const deadline = Date.now() + 30000; ;) {
      const response = await postPlant(apps[i % apps.length]!, { id, name: `plant ${id}` })
      statuses.push(response.statusCode)
      const retryAfter = Number(response.headers['retry-after'])
      if (response.statusCode !== 503 || !(retryAfter >= 0) || Date.now() + retryAfter * 1000 > deadline)
        return statuses
      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000))
    }
  }
  const answers = await Promise.all(ids.map(create))
  const stored = answers.every((statuses) => /^(503,)*200$/.test(statuses.join()))
  t.ok(stored, `each stored (200), before that only 503 with Retry-After: ${JSON.stringify(answers)}`)
}

t.test('SIGTERM under load: in-flight requests finish, every 200 is stored, the process exits 0', async (t) => {
  const { url, client } = await postgresSchema(t)
  const service = await startService(t, serviceEnv(t, { DATABASE_URL: url }))
  const answered = new Map<number, number>()
  let next = 0
  // 200 plants answered 200 (503 is valid too), then SIGTERM while 20 clients keep sending.
  let sendUntil = 5000
  let created = 0
  let enough!: () => void
  const twoHundred = new Promise<void>((resolve) => (enough = resolve))
  const worker = async () => {
    while (next < sendUntil) {
      const id = next++
      const status = await statusOf(service.url, { id, name: `plant ${id}` })
      answered.set(id, status)
      if (status === 200 && ++created === 200) enough()
      if (status === 0) return
    }
  }
  const workers = Promise.all(Array.from({ length: 20 }, worker))
  await Promise.race([twoHundred, workers])
  sendUntil = next + 400
  const exit = service.stop('SIGTERM')
  await workers
  t.equal(await exit, 0, 'exit 0')
  const ok = [...answered].filter(([, status]) => status === 200).map(([id]) => id)
  t.ok(ok.length >= 200, `${ok.length} plants answered 200`)
  const others = [...answered.values()].filter((status) => ![200, 503, 0].includes(status))
  t.same(others, [], 'only 200, 503 or no answer')
  const { rows } = await client.query('select id from plant where id = any($1::bigint[])', [ok])
  t.equal(rows.length, ok.length, 'every plant answered 200 is stored')
})

t.test(
  'PostgreSQL busy: a statement past DATABASE_STATEMENT_TIMEOUT_MS is 503; with the pool exhausted past ' +
    'DATABASE_CONNECT_TIMEOUT_MS readiness is 503; creates queued behind wait at most that long',
  async (t) => {
    const { url, client } = await postgresSchema(t)
    // The window to see the INSERT wait and ask for readiness.
    const statementTimeoutMs = 3000
    const app = await migratedApp(t, {
      databaseUrl: url,
      databasePoolSize: 1,
      databaseStatementTimeoutMs: statementTimeoutMs,
      databaseConnectTimeoutMs: 100,
    })
    t.ok(
      await until(async () => (await app.inject({ url: '/health/ready' })).statusCode === 200, 30000),
      'ready: the pool holds its one connection',
    )
    const send = (id: number) => postPlant(app, { id, name: 'Ficus' }, { t })
    // Another session holds id 1: the service's INSERT waits, holding the pool's only connection.
    await client.query('begin')
    await client.query(`insert into plant (id, name) values (1, 'Ficus')`)
    const started = performance.now()
    const blocked = send(1)
    t.ok(await until(() => blockedBy(client), 30000), "the service's INSERT waits on the row lock")
    const [ready, queued] = await Promise.all([app.inject({ url: '/health/ready' }), send(2)])
    const waitedMs = performance.now() - started
    const timedOut = await blocked
    t.equal(timedOut.statusCode, 503, 'statement timeout: 503')
    t.equal(ready.statusCode, 503, 'no free connection within the connect timeout: not ready')
    t.equal(queued.statusCode, 200, 'a create queued behind the stuck one is stored once it gives up')
    t.ok(waitedMs >= statementTimeoutMs, `it waited for the stuck one to give up (${Math.round(waitedMs)} ms)`)
    t.match([timedOut, ready], Array(2).fill({ headers: { 'retry-after': '1' } }), 'both with Retry-After')
    await client.query('rollback')
    t.equal((await send(1)).statusCode, 200, 'recovered: the retry is stored')
  },
)
