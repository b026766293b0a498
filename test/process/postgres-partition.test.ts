/** A network partition between the service and PostgreSQL: no byte passes, no connection closes. */
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import t from 'tap'
import { openStore } from '../../service/store/database.ts'
import { QUERY_TIMEOUT_MARGIN_MS } from '../../service/store/postgres.ts'
import { migratedApp, postgresSchema, storeOptions, testConfig } from '../helpers/app.ts'
import { blockedBy, partitionProxy, until } from '../helpers/partition-proxy.ts'
import { postPlant } from '../helpers/post-plant.ts'

/** Longer than the statement timeout: creates in flight and sent are answered before the heal. */
const PARTITION_MS = 10000

t.test(
  'a partition to PostgreSQL: creates get 503 with Retry-After within the statement plus connect timeouts; writes ' +
    'are back at the heal; nothing lost or stored twice',
  async (t) => {
    const { url, client } = await postgresSchema(t)
    const proxy = await partitionProxy(t, url)
    const { databaseStatementTimeoutMs, databaseConnectTimeoutMs } = testConfig()
    const boundMs = databaseStatementTimeoutMs + databaseConnectTimeoutMs + 1000
    const app = await migratedApp(t, { databaseUrl: proxy.url })

    const answers: Array<{ id: number; status: number; retryAfter: unknown; sentAt: number; answeredAt: number }> = []
    const send = async (id: number) => {
      const sentAt = performance.now()
      const { statusCode: status, headers } = await postPlant(app, { id, name: `plant ${id}` })
      answers.push({ id, status, retryAfter: headers['retry-after'], sentAt, answeredAt: performance.now() })
      return status
    }
    let nextId = 1000
    let stopped = false
    const clients = Promise.all(
      Array.from({ length: 16 }, async () => {
        while (!stopped) if ((await send(nextId++)) !== 200) await sleep(100)
      }),
    )
    const ok = () => answers.filter((answer) => answer.status === 200)
    t.ok(await until(() => ok().length >= 100, 60000), 'warm: 100 creates stored, the pool holds connections')

    // An INSERT waiting on the test's row lock, released during the partition: it commits unanswered.
    await client.query('begin')
    await client.query(`insert into plant (id, name) values (1, 'plant 1')`)
    const held = send(1)
    t.ok(await until(() => blockedBy(client), 30000), "the create's INSERT waits on the test's row lock")
    const partitionedAt = performance.now()
    proxy.partition()
    await client.query('rollback')
    t.ok(
      await until(async () => (await client.query('select 1 from plant where id = 1')).rowCount === 1, 30000),
      'it committed on the server, unanswered',
    )

    await sleep(Math.max(0, PARTITION_MS - (performance.now() - partitionedAt)))
    const healedAt = performance.now()
    proxy.heal()
    const back = () => answers.find((answer) => answer.sentAt >= healedAt && answer.status === 200)
    t.ok(await until(() => back() !== undefined, 10000), 'writes are back within 10 s of the heal')
    t.comment(`first create stored ${Math.round(back()!.answeredAt - healedAt)} ms after the heal`)
    stopped = true
    await clients
    t.equal(await held, 503, 'the create that committed unanswered: 503')
    const slowest = Math.max(...answers.map((answer) => answer.answeredAt - answer.sentAt))
    t.ok(slowest <= boundMs, `every create answered within ${boundMs} ms (slowest ${Math.round(slowest)} ms)`)
    const stray = answers.filter(({ status, retryAfter }) => status !== 200 && !(status === 503 && retryAfter === '1'))
    t.same(stray, [], 'every answer is 200, or 503 with Retry-After')
    // Answers sent before the partition may arrive just after it.
    const during = answers.filter((answer) => answer.answeredAt > partitionedAt + 1000 && answer.answeredAt < healedAt)
    t.same(
      during.filter((answer) => answer.status !== 503),
      [],
      'nothing is stored during the partition',
    )
    const sent = new Set(during.map((answer) => answer.sentAt > partitionedAt))
    t.equal(sent.size, 2, 'creates in flight at the partition and sent during it are answered')

    const stored = ok().map((answer) => answer.id)
    const { rows } = await client.query('select count(*)::int as n from plant where id = any($1::bigint[])', [stored])
    t.equal(rows[0].n, stored.length, `every create answered 200 is stored (${stored.length})`)
    // A 503 again (a slow connect on a loaded machine) is retried.
    const retry = async (id: number): Promise<number> => {
      for (const deadline = performance.now() + 30000; ; await sleep(1000)) {
        const status = await send(id)
        if (status !== 503 || performance.now() > deadline) return status
      }
    }
    const failed = answers.filter((answer) => answer.status !== 200).map((answer) => answer.id)
    const retried = await Promise.all(failed.map(retry))
    t.same(retried, Array(retried.length).fill(200), `every create answered 503 is 200 when retried (${failed.length})`)
    const { rows: table } = await client.query(
      'select count(*)::int as plants, count(distinct id)::int as ids from plant',
    )
    const ids = new Set(answers.map((answer) => answer.id)).size
    t.same(table[0], { plants: ids, ids }, 'every plant sent is stored, once')
  },
)

t.test(
  'a connection whose statement got no answer leaves the pool; one that got an error from the server stays',
  async (t) => {
    const { url } = await postgresSchema(t)
    const proxy = await partitionProxy(t, url)
    const statementTimeoutMs = 300
    const options = { databaseUrl: proxy.url, databasePoolSize: 1, databaseStatementTimeoutMs: statementTimeoutMs }
    const store = await openStore(storeOptions({ dataDir: t.testdir(), ...options }))
    t.teardown(() => store.close())
    const backend = async () =>
      (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store.db)).rows[0]!.pid
    const first = await backend()
    await t.rejects(sql`select 1 / 0`.execute(store.db), { code: '22012' })
    t.equal(await backend(), first, "after the server's error, the same connection")

    proxy.partition()
    const started = performance.now()
    const timedOut: unknown = await sql`select 1`.execute(store.db).catch((error: unknown) => error)
    const lateMs = performance.now() - started - statementTimeoutMs - QUERY_TIMEOUT_MARGIN_MS
    t.match(timedOut, { message: 'Query read timeout' })
    t.ok(store.isUnavailable(timedOut), 'unavailable: 503 with Retry-After')
    t.ok(lateMs >= -5 && lateMs < 1000, `after the statement timeout and its margin (${Math.round(lateMs)} ms late)`)
    // The old connection's path stays cut: the pool's one slot must go to a new one.
    proxy.healNew()
    t.not(await backend(), first, 'the next statement runs on a new connection')
  },
)
