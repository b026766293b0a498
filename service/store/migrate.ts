/** Kysely's Migrator, whose lock makes replicas starting together wait for one. @module */
import { type MigrationResultSet, Migrator } from 'kysely/migration'
import { asError } from '../errors.ts'
import type { Store } from './store.ts'
import { migrations } from './migrations/index.ts'

/** The store could not be brought to the latest migration; the server exits 1 with its message. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError'
}

/** @returns the migrations applied. @throws {MigrationError} unreachable, migrated by a newer release, or failed. */
export async function migrateToLatest(store: Store): Promise<string[]> {
  const schema = await store.migrationSchema().catch((error: unknown) => {
    throw new MigrationError(`The database cannot be reached: ${asError(error).message}`, { cause: error })
  })
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  })
  // No results only with an error.
  const { error, results = [] }: MigrationResultSet = await migrator.migrateToLatest()
  if (error !== undefined) {
    const { message } = asError(error)
    const missing = /previously executed migration (\S+) is missing/.exec(message)
    throw new MigrationError(
      missing
        ? `The database was migrated by a newer release (it has migration ${missing[1]}, unknown to this one); ` +
            'refusing to start'
        : `Migration failed: ${message}`,
      {
        cause: error,
      },
    )
  }
  return results.map((migration) => migration.migrationName)
}
