/**
 * Group commit: concurrent creates share a transaction, each its own outcome, also on failure; no deadlock; spans
 * linked.
 */
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api'
import pg from 'pg'
import t from 'tap'
import { openStore } from '../../service/store/database.ts'
import { migrateToLatest } from '../../service/store/migrate.ts'
import {
  GroupCommit,
  type PlantRecord,
  PlantRepository,
  StoreUnavailableError,
} from '../../service/store/plant-repository.ts'
import { startTracing } from '../../service/tracing.ts'
import { freshStore, postgresDatabase, storeOptions, TEST_DATABASE_URL, type TestContext } from '../helpers/app.ts'
import { only, startCollector, traceparent } from '../helpers/otlp-collector.ts'

/** A migrated store of `options`, closed at teardown. */
async function migrated(t: TestContext, options: Parameters<typeof storeOptions>[0]) {
  const store = await openStore(storeOptions(options))
  t.teardown(() => store.close())
  await migrateToLatest(store)
  return store
}
const repository = async (t: TestContext) => new PlantRepository(await migrated(t, await freshStore(t)))

const created = (plants: readonly PlantRecord[]) => plants.map((stored) => ({ status: 'created' as const, stored }))

const plant = (id: bigint, name: string, tag: string | null = null): PlantRecord => ({ id, name, tag })

t.test(
  'an idle save goes out alone; concurrent ones share transactions of at most maxBatch, each with its own outcome',
  async (t) => {
    const repo = await repository(t)
    const batches: number[] = []
    const group = new GroupCommit(repo, { maxBatch: 3, maxInFlight: 1, onBatch: (size) => batches.push(size) })
    t.equal((await group.save(plant(100n, 'alone'))).status, 'created')
    const outcomes = await Promise.all(
      [
        plant(1n, 'a'),
        plant(2n, 'b', 'x'),
        plant(1n, 'a'),
        plant(1n, 'changed'),
        plant(2n, 'b'),
        plant(3n, 'c'),
        plant(4n, 'd'),
      ].map((p) => group.save(p)),
    )
    t.same(batches, [1, 3, 3, 1])
    t.same(
      outcomes.map((outcome) => outcome.status),
      ['created', 'created', 'replayed', 'conflict', 'conflict', 'created', 'created'],
    )
    t.same(outcomes[3]!.stored, plant(1n, 'a'), 'a conflict reports what is stored')
  },
)

t.test('a failed batch is retried plant by plant: only the failing plant gets the error', async (t) => {
  const calls: number[] = []
  const failure = new Error('this plant cannot be written')
  const writer = {
    saveAll: async (plants: readonly PlantRecord[]) => {
      calls.push(plants.length)
      if (plants.some((p) => p.name === 'bad')) throw failure
      return created(plants)
    },
  }
  const failed: boolean[] = []
  const group = new GroupCommit(writer, {
    maxBatch: 10,
    maxInFlight: 1,
    onBatch: (_size, _seconds, isFailed) => failed.push(isFailed),
  })
  const results = await Promise.allSettled([
    group.save(plant(1n, 'good')),
    group.save(plant(2n, 'bad')),
    group.save(plant(3n, 'good')),
  ])
  t.same(
    results.map((result) => result.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  )
  t.equal((results[1] as PromiseRejectedResult).reason, failure)
  t.same(calls, [3, 1, 1, 1], 'the batch, then each plant alone')
  t.same(failed, [true, false, true, false])
})

t.test('a store outage fails the whole batch with StoreUnavailableError, without retrying', async (t) => {
  let calls = 0
  const writer = {
    saveAll: async () => {
      calls++
      throw new StoreUnavailableError('down')
    },
  }
  const group = new GroupCommit(writer, { maxBatch: 10, maxInFlight: 1 })
  const results = await Promise.allSettled([group.save(plant(1n, 'a')), group.save(plant(2n, 'b'))])
  t.ok(results.every((result) => result.status === 'rejected' && result.reason instanceof StoreUnavailableError))
  t.equal(calls, 1)
})

t.test('a transaction of several creates is a child of the first and links the others', async (t) => {
  const collector = await startCollector(t)
  const tracing = startTracing(collector.url)
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  let writing!: () => void
  const written = new Promise<void>((resolve) => (writing = resolve))
  // While it holds the first batch, the next saves queue up together.
  const writer = {
    saveAll: async (plants: readonly PlantRecord[]) => {
      writing()
      await gate
      return created(plants)
    },
  }
  const commit = new GroupCommit(writer, { maxBatch: 10, maxInFlight: 1, tracer: tracing.batchTracer('postgres') })
  // Each save inside a handler span of a trace of its own.
  const callers = [1, 2, 3, 4].map(() => traceparent())
  const saveAs = (id: number) => {
    const span = { ...callers[id - 1]!, traceFlags: TraceFlags.SAMPLED }
    return context.with(trace.setSpanContext(ROOT_CONTEXT, span), () => commit.save(plant(BigInt(id), `plant ${id}`)))
  }
  const first = saveAs(1)
  await written
  const queued = [2, 3, 4].map(saveAs)
  release()
  t.match(await Promise.all([first, ...queued]), Array(4).fill({ status: 'created' }))
  await tracing.shutdown()

  t.equal(collector.spans.length, 2, 'two transactions')
  const ofCaller = (index: number) =>
    only(
      t,
      collector.spans.filter((span) => span.traceId === callers[index]!.traceId),
      'store transaction',
    )
  t.match(ofCaller(0), {
    parentSpanId: callers[0]!.spanId,
    links: [],
    attributes: { 'db.system.name': 'postgresql', 'db.operation.batch.size': 1 },
  })
  const batch = ofCaller(1)
  t.equal(batch.parentSpanId, callers[1]!.spanId, 'a child of the first create of its batch')
  const others = callers.slice(2).map(({ traceId, spanId }) => ({ traceId, spanId }))
  t.same(batch.links, others, 'linked to the others, in order')
  t.equal(batch.attributes['db.operation.batch.size'], 3)
})

t.test('the repository rolls a failed transaction back: nothing of it is stored', async (t) => {
  const repo = await repository(t)
  // Refused by the database as it writes: NUL in PostgreSQL text; NULL in SQLite's NOT NULL column.
  const bad = { id: 2n, name: (TEST_DATABASE_URL ? 'nul\u0000' : null) as string, tag: null }
  await t.rejects(repo.saveAll([plant(1n, 'good'), bad]))
  t.match(await repo.saveAll([plant(1n, 'good')]), [{ status: 'created' }], 'the good plant was not stored')
})

t.test('PostgreSQL: concurrent batches over the same ids: no deadlock, every answer right', async (t) => {
  // A database of its own: pg_stat_database counts deadlocks per database.
  const url = await postgresDatabase(t)
  const store = await migrated(t, { dataDir: t.testdir(), databaseUrl: url })
  const stats = new pg.Client({ connectionString: url })
  await stats.connect()
  t.teardown(() => stats.end())
  const before = await deadlocks(stats)
  // Ten batches of ten in flight over twenty ids, in random order, one of two contents each.
  const group = new GroupCommit(new PlantRepository(store), { maxBatch: 10, maxInFlight: 10 })
  for (let round = 0; round < 3; round++) {
    const ids = Array.from({ length: 20 }, (_, i) => BigInt(round * 100 + i))
    const plants = Array.from({ length: 200 }, (_, i) =>
      plant(ids[i % 20]!, `plant ${ids[i % 20]} ${Math.random() < 0.5 ? 'a' : 'b'}`),
    ).sort(() => Math.random() - 0.5)
    const outcomes = await Promise.all(plants.map((p) => group.save(p)))
    const { rows } = await stats.query<{ id: string; name: string }>(
      'select id, name from plant where id = any($1::bigint[])',
      [ids],
    )
    t.equal(rows.length, 20, `round ${round}: each id stored once`)
    const stored = new Map(rows.map((row) => [BigInt(row.id), row.name]))
    const wrong = outcomes.filter(({ status, stored: { name } }, i) => {
      const expected = stored.get(plants[i]!.id) === plants[i]!.name ? ['created', 'replayed'] : ['conflict']
      return !expected.includes(status) || name !== stored.get(plants[i]!.id)
    })
    t.same(wrong, [], `round ${round}: every outcome matches the stored row`)
    t.equal(outcomes.filter(({ status }) => status === 'created').length, 20, `round ${round}: one create per id`)
  }
  await store.close()
  t.equal((await deadlocks(stats, true)) - before, 0, 'no deadlock detected')
})

/** `pg_stat_database.deadlocks` of `client`'s database; `settled`: once its other sessions end. */
async function deadlocks(client: pg.Client, settled = false) {
  for (const deadline = Date.now() + 30000; settled && Date.now() < deadline;) {
    const { rows } = await client.query(
      'select count(*)::int as others from pg_stat_activity where datname = current_database() and pid <> ' +
        'pg_backend_pid()',
    )
    if (rows[0].others === 0) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const { rows } = await client.query('select deadlocks::int from pg_stat_database where datname = current_database()')
  return rows[0].deadlocks
}
