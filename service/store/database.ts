/**
 * Opens the store: the one module that picks the database. Above it, the repository
 * and the migrations are the same Kysely code for every dialect.
 *
 * @module
 */
import { openPostgres } from './postgres.js'
import { openSqlite } from './sqlite.js'
import type { Store, StoreOptions } from './store.js'

/**
 * Opens the store named by the options: PostgreSQL when `databaseUrl` is set,
 * else the embedded SQLite store in its data directory (created when missing).
 *
 * @throws {ConfigError} naming `DATA_DIR` and the reason when the data directory or
 *   the store's files in it cannot be created, read or written by this process
 *   (read-only file system, another owner, not a directory), or the database
 *   cannot be opened. PostgreSQL connections are opened lazily: an unreachable
 *   database shows on first use.
 */
export function openStore(options: StoreOptions): Store {
  return options.databaseUrl === undefined ? openSqlite(options) : openPostgres(options)
}
