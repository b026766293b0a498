/** The one module that picks the database. @module */
import { openPostgres } from './postgres.ts'
import { openSqlite } from './sqlite.ts'
import type { Store, StoreOptions } from './store.ts'

/** @throws {ConfigError} when this process cannot use `DATA_DIR`. */
export async function openStore(options: StoreOptions): Promise<Store> {
  return options.databaseUrl === undefined ? openSqlite(options) : openPostgres(options)
}
