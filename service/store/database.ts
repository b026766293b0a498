/**
 * Opens the store: the one module that picks the database.
 * @module
 */
import { openPostgres } from './postgres.js'
import { openSqlite } from './sqlite.js'
import type { Store, StoreOptions } from './store.js'

/**
 * PostgreSQL when `databaseUrl` is set (connecting lazily), else SQLite in `dataDir`.
 * @throws {ConfigError} naming `DATA_DIR` and the reason when this process cannot use it.
 */
export function openStore(options: StoreOptions): Store {
  return options.databaseUrl === undefined ? openSqlite(options) : openPostgres(options)
}
