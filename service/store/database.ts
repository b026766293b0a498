/** The one module that picks the database. @module */
import { openPostgres } from './postgres.js'
import { openSqlite } from './sqlite.js'
import type { Store, StoreOptions } from './store.js'

/** @throws {ConfigError} when this process cannot use `DATA_DIR`. */
export function openStore(options: StoreOptions): Store {
  return options.databaseUrl === undefined ? openSqlite(options) : openPostgres(options)
}
