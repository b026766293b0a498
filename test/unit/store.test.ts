/**
 * The store: which failures are "unavailable" (503) in each dialect, a query then rejecting with
 * StoreUnavailableError; the embedded store's worker (locks waited for there; a crash an outage); migrations.
 */
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Worker } from 'node:worker_threads'
import SQLite from 'better-sqlite3'
import { Kysely, sql } from 'kysely'
import { Migrator } from 'kysely/migration'
import t, { type Test } from 'tap'
import { openStore } from '../../service/store/database.ts'
import { PlantRepository } from '../../service/store/plant-repository.ts'
import {
  BUSY_TIMEOUT_MS,
  SQLITE_FILE,
  SqliteWorkerDialect,
  startSqliteWorker,
  WorkerConnection,
} from '../../service/store/sqlite.ts'
import { StoreUnavailableError } from '../../service/store/store.ts'
import { migrateToLatest } from '../../service/store/migrate.ts'
import { migrations } from '../../service/store/migrations/index.ts'
import { POSTGRES_URL, storeOptions } from '../helpers/app.ts'

/** A store on `dataDir` (and `databaseUrl`), closed at teardown. */
function opened(t: Test, dataDir = t.testdir(), databaseUrl?: string) {
  const store = openStore(storeOptions({ dataDir, databaseUrl }))
  t.teardown(() => store.close())
  return store
}

/** A rejection's reason, as the value. */
const caught = (error: unknown) => error

/** An Error of `message`, with `code` if given. */
const error = (message: string, code?: string | number) =>
  Object.assign(new Error(message), code === undefined ? {} : { code })

/** A Kysely on the embedded store's worker dialect, destroyed at teardown. */
function workerDb(t: Test, connection: ConstructorParameters<typeof WorkerConnection>[0]) {
  const db = new Kysely<Record<string, never>>({ dialect: new SqliteWorkerDialect(new WorkerConnection(connection)) })
  t.teardown(() => db.destroy())
  return db
}

t.test(
  'PostgreSQL: connection, resource and shutdown failures are "unavailable"; constraint or data errors are not',
  async (t) => {
    const store = opened(t, t.testdir(), POSTGRES_URL)
    for (const unavailable of [
      error('connection failure', '08006'),
      error('too many connections', '53300'),
      error('terminating connection due to administrator command', '57P01'),
      error('the database system is starting up', '57P03'),
      error('canceling statement due to statement timeout', '57014'),
      error('cannot execute INSERT in a read-only transaction', '25006'),
      error('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
      error('timeout exceeded when trying to connect'),
      error('Connection terminated unexpectedly'),
      error('Query read timeout'),
    ])
      t.ok(store.isUnavailable(unavailable), unavailable.message)
    for (const fault of [
      error('duplicate key value', '23505'),
      error('invalid byte sequence for encoding "UTF8": 0x00', '22021'),
      error('syntax error', '42601'),
      'not an error',
    ])
      t.notOk(store.isUnavailable(fault), String(fault))
  },
)

t.test(
  'SQLite: a database locked by another connection, a full disk or a failing one is "unavailable"; other errors not',
  async (t) => {
    const store = opened(t)
    for (const unavailable of [
      error('database is locked', 'SQLITE_BUSY'),
      error('database or disk is full', 'SQLITE_FULL'),
      ...['_WRITE', '_FSYNC', '_SHMSIZE', ''].map((kind) => error('disk I/O error', `SQLITE_IOERR${kind}`)),
    ])
      t.ok(store.isUnavailable(unavailable), String(unavailable.code))
    for (const fault of [
      error('UNIQUE constraint failed', 'SQLITE_CONSTRAINT_PRIMARYKEY'),
      error('file is not a database', 'SQLITE_NOTADB'),
      error('attempt to write a readonly database', 'SQLITE_READONLY'),
      error('no code'),
      error('not a string code', 13),
    ])
      t.notOk(store.isUnavailable(fault), fault.message)
  },
)

t.test('migrations apply up and roll back down', async (t) => {
  const store = opened(t)
  t.same(await migrateToLatest(store), ['0001-create-plant'])
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations } })
  const down = await migrator.migrateDown()
  t.equal(down.error, undefined)
  t.match(down.results, [{ migrationName: '0001-create-plant', direction: 'Down', status: 'Success' }])
  t.same(await migrateToLatest(store), ['0001-create-plant'], 'and up again')
})

t.test('a failing migration is a MigrationError that says why', async (t) => {
  const dataDir = t.testdir()
  const store = opened(t, dataDir)
  const sqlite = new SQLite(join(dataDir, SQLITE_FILE))
  sqlite.exec('create table plant (something text)')
  sqlite.close()
  await t.rejects(migrateToLatest(store), {
    name: 'MigrationError',
    message: /^Migration failed: table "?plant"? already exists/,
  })
})

t.test(
  'SQLite: a query while another process holds the write lock waits on the worker, then is unavailable',
  async (t) => {
    const dataDir = t.testdir()
    const store = opened(t, dataDir)
    await migrateToLatest(store)
    const holder = new SQLite(join(dataDir, SQLITE_FILE))
    holder.exec('begin immediate')
    let ticks = 0
    const timer = setInterval(() => ticks++, 10)
    const started = Date.now()
    const error = await store.db
      .insertInto('plant')
      .values({ id: 1n, name: 'locked out', tag: null })
      .execute()
      .catch(caught)
    const waited = Date.now() - started
    clearInterval(timer)
    holder.exec('rollback')
    holder.close()
    t.type(error, StoreUnavailableError)
    t.match(error, { message: 'The store is unavailable (database is locked)', cause: { code: 'SQLITE_BUSY' } })
    t.ok(store.isUnavailable(error))
    t.ok(waited >= BUSY_TIMEOUT_MS - 100, `waited for the lock (${waited} ms)`)
    t.ok(ticks >= BUSY_TIMEOUT_MS / 10 / 4, `the event loop turned (${ticks} ticks of 10 ms)`)
    const other = await sql`select * from nowhere`.execute(store.db).catch(caught)
    t.notOk(other instanceof StoreUnavailableError, "the query's own error is left as it is")
    t.match(other, { message: 'no such table: nowhere', code: 'SQLITE_ERROR' })
    t.match(
      await new PlantRepository(store).saveAll([{ id: 2n ** 63n - 1n, name: 'after', tag: null }]),
      [{ status: 'created', stored: { id: 2n ** 63n - 1n } }],
      'writes again once released, the id exact',
    )
  },
)

t.test('PostgreSQL: a server that cannot be reached rejects any query with StoreUnavailableError', async (t) => {
  const store = opened(t, t.testdir(), 'postgres://nobody@127.0.0.1:1/none')
  const error = await sql`select 1`.execute(store.db).catch(caught)
  t.type(error, StoreUnavailableError)
  t.match(error, { message: /^The store is unavailable \(.*ECONNREFUSED/, cause: { code: 'ECONNREFUSED' } })
  t.ok(store.isUnavailable(error))
})

t.test(
  "the embedded store's worker: one that exits or fails rejects its queries as unavailable, is reported, is replaced",
  async (t) => {
    const file = join(t.testdir(), SQLITE_FILE)
    // One that never answers (then terminated), one that fails at once, the real one.
    const workers = [
      () => new Worker('setInterval(() => {}, 1000)', { eval: true }),
      () => new Worker('throw new Error("boom")', { eval: true }),
      () => startSqliteWorker(file),
    ]
    const started: Worker[] = []
    const gone: Error[] = []
    const db = workerDb(t, {
      startWorker: () => started[started.push(workers[started.length]!()) - 1]!,
      onWorkerGone: (error) => gone.push(error),
    })
    const silent = sql`select 1`.execute(db)
    await sleep(50)
    await started[0]!.terminate()
    await t.rejects(silent, { name: 'StoreUnavailableError', message: "The store's worker stopped" })
    await t.rejects(sql`select 1`.execute(db), { name: 'StoreUnavailableError', cause: { message: 'boom' } })
    t.match(gone, [{ message: /^The store's worker exited with code \d+$/ }, { message: 'boom' }], 'each reported once')
    t.same((await sql<{ one: bigint }>`select 1 as one`.execute(db)).rows, [{ one: 1n }], 'a new worker answers')
    t.equal(started.length, 3)
    await db.destroy()
    t.equal(gone.length, 2, 'a close is not reported as a failure')
    const failed = workerDb(t, { startWorker: workers[1]! })
    await t.rejects(sql`select 1`.execute(failed), { name: 'StoreUnavailableError' })
    await t.resolves(failed.destroy(), 'a store whose worker is gone closes at once')
  },
)

t.test('SQLite: a worker stopping during a transaction: nothing of it stored, the rest unavailable', async (t) => {
  const file = join(t.testdir(), SQLITE_FILE)
  const started: Worker[] = []
  const db = workerDb(t, { startWorker: () => started[started.push(startSqliteWorker(file)) - 1]! })
  await sql`create table t (x integer)`.execute(db)
  const insert = (db: Kysely<Record<string, never>>, x: number) => sql`insert into t (x) values (${x})`.execute(db)
  const stopped = { name: 'StoreUnavailableError', message: "The store's worker stopped during the transaction" }
  await t.rejects(
    db.transaction().execute(async (trx) => {
      await insert(trx, 1)
      await started.at(-1)!.terminate()
      await insert(trx, 2)
    }),
    stopped,
    'stopped between two statements',
  )
  await t.rejects(
    db.transaction().execute(async (trx) => {
      await insert(trx, 3)
      await started.at(-1)!.terminate()
    }),
    stopped,
    'stopped before the commit',
  )
  t.same((await sql`select x from t`.execute(db)).rows, [], 'nothing of either is stored')
  await db.transaction().execute((trx) => insert(trx, 4))
  t.same((await sql`select x from t`.execute(db)).rows, [{ x: 4n }], 'the next transaction commits')
  t.equal(started.length, 3, 'a worker for each')
})

t.test(
  'SQLite: a transaction commits or rolls back on the one connection, never interleaved with queries or a batch; no streaming',
  async (t) => {
    const store = opened(t)
    await migrateToLatest(store)
    const insert = (db: typeof store.db, id: bigint) =>
      db
        .insertInto('plant')
        .values({ id, name: `plant ${id}`, tag: null })
        .execute()
    const ids = async () => (await store.db.selectFrom('plant').select('id').execute()).map((row) => row.id)
    let outside: Promise<unknown> = Promise.resolve()
    await store.db.transaction().execute(async (trx) => {
      await insert(trx, 1n)
      // Queued behind the transaction: it sees the committed row, not a half-done one.
      outside = ids()
      await sleep(20)
      await insert(trx, 2n)
    })
    t.same(await outside, [1n, 2n], 'a query issued mid-transaction ran after it')
    let batch: Promise<unknown> = Promise.resolve()
    await t.rejects(
      store.db.transaction().execute(async (trx) => {
        await insert(trx, 3n)
        // A create's batch meanwhile: it must not join the transaction, or its rollback would drop it.
        batch = new PlantRepository(store).saveAll([{ id: 4n, name: 'plant 4', tag: null }])
        await sleep(20)
        throw new Error('changed my mind')
      }),
      { message: 'changed my mind' },
    )
    t.match(await batch, [{ status: 'created' }])
    t.same(await ids(), [1n, 2n, 4n], 'the rolled-back row not stored; the batch sent during it is, after it')
    await t.rejects(
      (async () => {
        for await (const row of store.db.selectFrom('plant').selectAll().stream()) t.fail(`streamed ${String(row)}`)
      })(),
      { message: 'The embedded store does not stream queries' },
    )
  },
)

t.test('a store that was never queried closes at once', async (t) => {
  const store = openStore(storeOptions({ dataDir: t.testdir() }))
  await t.resolves(store.close(), 'closed without a worker')
})
