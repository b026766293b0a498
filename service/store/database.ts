/**
 * Opens the store: the one module that knows which database runs. Above it, the
 * repository and the migrations are the same Kysely code for every dialect.
 *
 * - embedded (default): SQLite through better-sqlite3, in `<dataDir>/plants.sqlite3`,
 *   WAL journal with `synchronous=FULL`, so a commit is on disk (fsync) before it
 *   returns; SQLite's file locks keep a second process on the same file correct.
 *
 * @module
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import type { StoreSchema } from './schema.js'

/** Where the store lives. */
export interface StoreOptions {
  /** Directory of the embedded store; created when missing. */
  readonly dataDir: string
}

/** File name of the embedded store inside the data directory. */
export const SQLITE_FILE = 'plants.sqlite3'

/**
 * Opens the embedded store, creating its data directory when needed.
 *
 * @returns a Kysely instance; `destroy()` closes it.
 * @throws when the directory cannot be created or the file cannot be opened.
 */
export function openStore(options: StoreOptions): Kysely<StoreSchema> {
  mkdirSync(options.dataDir, { recursive: true })
  const file = join(options.dataDir, SQLITE_FILE)
  return new Kysely<StoreSchema>({
    dialect: new SqliteDialect({
      database: () => {
        const database = new SQLite(file, { timeout: 5000 })
        database.pragma('journal_mode = WAL')
        database.pragma('synchronous = FULL')
        // ids are signed 64-bit: read every INTEGER as bigint so none is rounded.
        database.defaultSafeIntegers(true)
        return Promise.resolve(database)
      },
    }),
  })
}
