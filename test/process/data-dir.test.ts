/**
 * A DATA_DIR the service cannot use: not creatable, not a database, migrated by a newer release. Full or foreign:
 * services/file-systems.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import t from 'tap'
import { createApp } from '../../service/app.ts'
import { openStore } from '../../service/store/database.ts'
import { SQLITE_FILE } from '../../service/store/sqlite.ts'
import { migrateToLatest } from '../../service/store/migrate.ts'
import { sqliteFile, storeOptions, testConfig } from '../helpers/app.ts'
import { run } from '../helpers/command.ts'

const start = (dataDir: string) => createApp(testConfig({ dataDir, databaseUrl: undefined }))
const refusal = (dataDir: string, reason: string) => ({
  name: 'ConfigError',
  message: `Refusing to start: DATA_DIR (${dataDir}) cannot be used: ${reason}`,
})

t.test('a DATA_DIR that cannot be created stops the start with a message naming DATA_DIR and the reason', async (t) => {
  // Root may write any directory: a read-only file system instead.
  const root = process.getuid?.() === 0
  const parent = mkdtempSync(join(tmpdir(), 'plant-store-parent-'))
  t.teardown(async () => {
    if (root) await run('umount', ['--lazy', parent])
    chmodSync(parent, 0o700)
    rmSync(parent, { recursive: true, force: true })
  })
  if (root) await run('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', parent])
  else chmodSync(parent, 0o555)
  const dataDir = join(parent, 'data')
  const reason = root ? 'EROFS: read-only file system' : 'EACCES: permission denied'
  await t.rejects(start(dataDir), refusal(dataDir, `${reason}, mkdir '${dataDir}'`))
  t.notOk(existsSync(dataDir), 'nothing was created')
})

t.test(
  "a store file that is not a database, or cannot be opened, stops the start, naming DATA_DIR, the file and SQLite's reason",
  async (t) => {
    const dataDir = t.testdir({
      [SQLITE_FILE]: 'not a database, just text that is long enough to have a header'.repeat(10),
    })
    await t.rejects(start(dataDir), refusal(dataDir, `${SQLITE_FILE}: file is not a database (SQLITE_NOTADB)`))
    const directory = t.testdir({ [SQLITE_FILE]: {} })
    await t.rejects(
      start(directory),
      refusal(directory, `${SQLITE_FILE}: unable to open database file (SQLITE_CANTOPEN)`),
    )
  },
)

t.test(
  'a store migrated by a newer release stops the start, naming the unknown migration, and is released',
  async (t) => {
    const dataDir = t.testdir()
    const store = await openStore(storeOptions({ dataDir, databaseUrl: undefined }))
    await migrateToLatest(store)
    const wal = join(dataDir, `${SQLITE_FILE}-wal`)
    t.ok(existsSync(wal), 'an open store has its write-ahead log')
    await store.close()
    t.notOk(existsSync(wal), 'the last connection to close removes it')
    const sqlite = await sqliteFile(join(dataDir, SQLITE_FILE))
    await sql`insert into kysely_migration (name, timestamp) values ('9999-from-the-future', '2099-01-01T00:00:00Z')`.execute(
      sqlite,
    )
    const refused = {
      name: 'MigrationError',
      message: /migrated by a newer release.*9999-from-the-future.*refusing to start/,
    }
    await t.rejects(start(dataDir), refused)
    await sql`delete from kysely_migration where name = '0001-create-plant'`.execute(sqlite)
    await sqlite.destroy()
    await t.rejects(start(dataDir), refused, 'as many migrations recorded as this release knows, but another one')
    t.notOk(existsSync(wal), 'no connection of the refused start is left open')
  },
)
