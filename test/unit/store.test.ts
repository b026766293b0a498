/** The store below the repository: which failures count as "unavailable" (503) in each dialect; migrations up, down, and failing. */
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Migrator } from 'kysely/migration'
import t from 'tap'
import { openStore } from '../../service/store/database.ts'
import { SQLITE_FILE } from '../../service/store/sqlite.ts'
import { migrateToLatest } from '../../service/store/migrate.ts'
import { migrations } from '../../service/store/migrations/index.ts'
import { POSTGRES_URL, storeOptions } from '../helpers/app.ts'

t.test(
  'PostgreSQL: connection, resource and shutdown failures are "unavailable"; constraint or data errors are not',
  async (t) => {
    const store = openStore(storeOptions({ dataDir: t.testdir(), databaseUrl: POSTGRES_URL }))
    t.teardown(() => store.close())
    const error = (message: string, code?: string) =>
      Object.assign(new Error(message), code === undefined ? {} : { code })
    for (const unavailable of [
      error('connection failure', '08006'),
      error('too many connections', '53300'),
      error('terminating connection due to administrator command', '57P01'),
      error('the database system is starting up', '57P03'),
      error('canceling statement due to statement timeout', '57014'),
      error('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
      error('timeout exceeded when trying to connect'),
      error('Connection terminated unexpectedly'),
      error('Query read timeout'),
    ]) {
      t.ok(store.isUnavailable(unavailable), unavailable.message)
    }
    for (const fault of [
      error('duplicate key value', '23505'),
      error('invalid byte sequence for encoding "UTF8": 0x00', '22021'),
      error('syntax error', '42601'),
      'not an error',
    ]) {
      t.notOk(store.isUnavailable(fault), String(fault))
    }
  },
)

t.test(
  'SQLite: a database locked by another connection, a full disk or a failing one is "unavailable"; other errors are not',
  async (t) => {
    const store = openStore(storeOptions({ dataDir: t.testdir() }))
    t.teardown(() => store.close())
    const error = (message: string, code: string) => Object.assign(new Error(message), { code })
    for (const unavailable of [
      error('database is locked', 'SQLITE_BUSY'),
      error('database or disk is full', 'SQLITE_FULL'),
      error('disk I/O error', 'SQLITE_IOERR_WRITE'),
      error('disk I/O error', 'SQLITE_IOERR_FSYNC'),
      error('disk I/O error', 'SQLITE_IOERR_SHMSIZE'),
      error('disk I/O error', 'SQLITE_IOERR'),
    ]) {
      t.ok(store.isUnavailable(unavailable), unavailable.code)
    }
    for (const fault of [
      error('UNIQUE constraint failed', 'SQLITE_CONSTRAINT_PRIMARYKEY'),
      error('file is not a database', 'SQLITE_NOTADB'),
      error('attempt to write a readonly database', 'SQLITE_READONLY'),
      new Error('no code'),
      Object.assign(new Error('not a string code'), { code: 13 }),
    ]) {
      t.notOk(store.isUnavailable(fault), fault.message)
    }
  },
)

t.test('migrations apply up and roll back down', async (t) => {
  const store = openStore(storeOptions({ dataDir: t.testdir() }))
  t.teardown(() => store.close())
  t.same(await migrateToLatest(store), ['0001-create-plant'])
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations } })
  const down = await migrator.migrateDown()
  t.equal(down.error, undefined)
  t.match(down.results, [{ migrationName: '0001-create-plant', direction: 'Down', status: 'Success' }])
  t.same(await migrateToLatest(store), ['0001-create-plant'], 'and up again')
})

t.test('a failing migration is a MigrationError that says why', async (t) => {
  const dataDir = t.testdir()
  const store = openStore(storeOptions({ dataDir }))
  t.teardown(() => store.close())
  const sqlite = new SQLite(join(dataDir, SQLITE_FILE))
  sqlite.exec('create table plant (something text)')
  sqlite.close()
  await t.rejects(migrateToLatest(store), {
    name: 'MigrationError',
    message: /^Migration failed: table "?plant"? already exists/,
  })
})
