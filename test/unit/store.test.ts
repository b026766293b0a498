/**
 * The store: which failures are "unavailable" (503) in each dialect, a query then rejecting with
 * StoreUnavailableError; the embedded store's one connection (locks waited for off the event loop, transactions whole);
 * migrations.
 */
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { Migrator } from 'kysely/migration'
import t, { type Test } from 'tap'
import { openStore } from '../../service/store/database.ts'
import { PlantRepository } from '../../service/store/plant-repository.ts'
import { BUSY_TIMEOUT_MS, SQLITE_FILE } from '../../service/store/sqlite.ts'
import { COMPILED_INSERTS_KEPT, StoreUnavailableError } from '../../service/store/store.ts'
import { migrateToLatest } from '../../service/store/migrate.ts'
import { migrations } from '../../service/store/migrations/index.ts'
import { POSTGRES_URL, sqliteFile, storeOptions } from '../helpers/app.ts'

/** A store on `dataDir` (and `databaseUrl`), closed at teardown. */
async function opened(t: Test, dataDir = t.testdir(), databaseUrl?: string) {
  const store = await openStore(storeOptions({ dataDir, databaseUrl }))
  t.teardown(() => store.close())
  return store
}

/** A migrated store on a directory of its own, and the plants' repository on it. */
async function repositoryOf(t: Test) {
  const store = await opened(t)
  await migrateToLatest(store)
  return { store, repository: new PlantRepository(store) }
}

/** A rejection's reason, as the value. */
const caught = (error: unknown) => error

/** An Error of `message`, with `code` if given. */
const error = (message: string, code?: string | number) =>
  Object.assign(new Error(message), code === undefined ? {} : { code })

t.test(
  'PostgreSQL: connection, resource and shutdown failures are "unavailable"; constraint or data errors are not',
  async (t) => {
    const store = await opened(t, t.testdir(), POSTGRES_URL)
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
    const store = await opened(t)
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
  const store = await opened(t)
  t.same(await migrateToLatest(store), ['0001-create-plant'])
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations } })
  const down = await migrator.migrateDown()
  t.equal(down.error, undefined)
  t.match(down.results, [{ migrationName: '0001-create-plant', direction: 'Down', status: 'Success' }])
  t.same(await migrateToLatest(store), ['0001-create-plant'], 'and up again')
})

t.test('a failing migration is a MigrationError that says why', async (t) => {
  const dataDir = t.testdir()
  const store = await opened(t, dataDir)
  const sqlite = await sqliteFile(join(dataDir, SQLITE_FILE))
  await sql`create table plant (something text)`.execute(sqlite)
  await sqlite.destroy()
  await t.rejects(migrateToLatest(store), {
    name: 'MigrationError',
    message: /^Migration failed: table "?plant"? already exists/,
  })
})

t.test(
  'SQLite: a query while another process holds the write lock waits off the event loop, then is unavailable',
  async (t) => {
    const dataDir = t.testdir()
    const store = await opened(t, dataDir)
    await migrateToLatest(store)
    const holder = await sqliteFile(join(dataDir, SQLITE_FILE))
    await sql`begin immediate`.execute(holder)
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
    const batch = await new PlantRepository(store).saveAll([{ id: 5n, name: 'locked out', tag: null }]).catch(caught)
    await sql`rollback`.execute(holder)
    // The statements that failed, used again: each write commits, as another connection sees.
    await store.db.insertInto('plant').values({ id: 3n, name: 'after', tag: null }).execute()
    await new PlantRepository(store).saveAll([{ id: 6n, name: 'after', tag: null }])
    const seen = await holder
      .selectFrom('plant')
      .select(sql<string>`cast(id as text)`.as('id'))
      .execute()
    t.same(seen.map((row) => row.id).sort(), ['3', '6'], 'the writes after the lock are committed')
    await holder.destroy()
    t.type(batch, StoreUnavailableError, 'a batch too')
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
  const store = await opened(t, t.testdir(), 'postgres://nobody@127.0.0.1:1/none')
  const error = await sql`select 1`.execute(store.db).catch(caught)
  t.type(error, StoreUnavailableError)
  t.match(error, { message: /^The store is unavailable \(.*ECONNREFUSED/, cause: { code: 'ECONNREFUSED' } })
  t.ok(store.isUnavailable(error))
})

t.test(
  'SQLite: a transaction commits or rolls back on the one connection, never interleaved with queries or a batch; no streaming',
  async (t) => {
    const store = await opened(t)
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
    t.same(await outside, [1, 2], 'a query issued mid-transaction ran after it')
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
    t.same(await ids(), [1, 2, 4], 'the rolled-back row not stored; the batch sent during it is, after it')
    const large = 2n ** 63n - 1n
    t.same(
      await store.db.insertInto('plant').values({ id: large, name: 'large', tag: null }).returning('name').execute(),
      [{ name: 'large' }],
      'an insert returning gives its rows',
    )
    t.same(
      (await sql<{ id: string }>`select cast(id as text) as id from plant where id = ${large}`.execute(store.db)).rows,
      [{ id: large.toString() }],
      'a bigint is bound exactly',
    )
    await t.rejects(
      (async () => {
        for await (const row of store.db.selectFrom('plant').selectAll().stream()) t.fail(`streamed ${String(row)}`)
      })(),
      { message: 'The embedded store does not stream queries' },
    )
  },
)

t.test('a store that was never queried closes at once', async (t) => {
  const store = await openStore(storeOptions({ dataDir: t.testdir() }))
  await t.resolves(store.close())
})

t.test('SQLite: past the statements kept, the first prepared are finalized; the store still closes', async (t) => {
  const store = await openStore(storeOptions({ dataDir: t.testdir() }))
  for (let n = 0; n < 300; n++) {
    const { rows } = await sql<{ n: number }>`select ${sql.lit(n)} as n`.execute(store.db)
    if (rows[0]?.n !== n) t.fail(`statement ${n} answered ${JSON.stringify(rows)}`)
  }
  await t.resolves(store.close(), 'no statement left unfinalized')
})

t.test(
  'a batch with stored ids among new ones: each new plant created once, each stored one replayed or refused',
  async (t) => {
    const { store, repository } = await repositoryOf(t)
    const plant = (n: bigint, name: string) => ({ id: 2n ** 53n + n, name, tag: null })
    await repository.saveAll([plant(2n, 'two'), plant(4n, 'four')])
    // New ids before and after the stored ones: a first try that fails must leave none of them stored.
    const batch = [plant(1n, 'one'), plant(2n, 'two'), plant(3n, 'three'), plant(4n, 'other'), plant(5n, 'five')]
    t.same(
      (await repository.saveAll(batch)).map(({ status, stored }) => `${status} ${stored.name}`),
      ['created one', 'replayed two', 'created three', 'conflict four', 'created five'],
    )
    const rows = await store.db
      .selectFrom('plant')
      .select([sql<string>`cast(id as text)`.as('id'), 'name'])
      .orderBy('id')
      .execute()
    t.same(
      rows.map(({ id, name }) => `${BigInt(id) - 2n ** 53n} ${name}`),
      ['1 one', '2 two', '3 three', '4 four', '5 five'],
    )
  },
)

t.test(
  'past the batch sizes whose insert is kept, the least used is compiled again; every plant stored exactly',
  async (t) => {
    const { store, repository } = await repositoryOf(t)
    const sizes = [...Array.from({ length: COMPILED_INSERTS_KEPT + 2 }, (_, i) => i + 1), 1, 2, 1]
    let next = 2n ** 53n
    const saved = []
    for (const size of sizes) {
      const batch = Array.from({ length: size }, () => ({
        id: ++next,
        name: `plant ${next}`,
        tag: size % 2 ? null : 'x',
      }))
      const outcomes = await repository.saveAll(batch)
      if (outcomes.some((outcome) => outcome.status !== 'created')) t.fail(`a batch of ${size} not created`)
      saved.push(...batch)
    }
    const rows = await store.db
      .selectFrom('plant')
      .select([sql<string>`cast(id as text)`.as('id'), 'name', 'tag'])
      .orderBy('id')
      .execute()
    t.strictSame(
      rows,
      saved.map(({ id, name, tag }) => ({ id: `${id}`, name, tag })),
    )
  },
)
