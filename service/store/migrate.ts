/**
 * Applies the migrations with Kysely's Migrator: on PostgreSQL its advisory lock makes
 * replicas that start together wait for one; on SQLite the write lock serializes them.
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
 * Migrates the store to the newest migration this release knows; returns those applied now.
 * @throws {MigrationError} when the database cannot be reached, was migrated by a newer
 *   release, or a migration fails.
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
