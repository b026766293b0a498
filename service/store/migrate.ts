/**
 * Applies the store's migrations with Kysely's Migrator. On PostgreSQL the
 * Migrator holds an advisory lock, so when several replicas start at once one
 * applies and the others wait; on SQLite the database's write lock serializes them.
 *
 * @module
 */
import { type MigrationResultSet, Migrator } from 'kysely/migration'
import type { Store } from './store.js'
import { migrations } from './migrations/index.js'

/** The store cannot be migrated; the message says why. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError'
}

/**
 * Brings the store's schema to the newest migration this release knows.
 *
 * @param store - the open store.
 * @returns names of the migrations applied now (empty when it was up to date).
 * @throws {MigrationError} when the database cannot be reached, was migrated by a
 *   newer release (it has migrations this code does not know), or a migration fails.
 */
export async function migrateToLatest(store: Store): Promise<string[]> {
  const schema = await store.migrationSchema().catch((error: unknown) => {
    throw new MigrationError(`The database cannot be reached: ${(error as Error).message}`, { cause: error })
  })
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema })
  const result: MigrationResultSet = await migrator.migrateToLatest()
  if (result.error !== undefined) {
    const message = (result.error as Error).message
    const missing = /previously executed migration (\S+) is missing/.exec(message)
    throw new MigrationError(
      missing
        ? `The database was migrated by a newer release (it has migration ${missing[1]}, unknown to this one); refusing to start`
        : `Migration failed: ${message}`,
      { cause: result.error },
    )
  }
  // `results` is set whenever `error` is not (Kysely's MigrationResultSet).
  return result.results!.map((migration) => migration.migrationName)
}
