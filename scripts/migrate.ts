/**
 * `npm run migrate`: applies pending migrations to the configured store and exits,
 * for deployments that start replicas with `MIGRATE_ON_START=false`. Reads the same
 * configuration as the service (`service/config.ts`).
 *
 * @module
 */
import { loadConfig } from '../service/config.ts'
import { openStore } from '../service/store/database.ts'
import { migrateToLatest } from '../service/store/migrate.ts'

const config = loadConfig(process.env)
const store = await openStore({
  ...config,
  onConnectionError: (error) => process.stderr.write(`plant-store migrate: connection error: ${error.message}\n`),
})
try {
  const applied = await migrateToLatest(store)
  process.stdout.write(applied.length === 0 ? 'The store is up to date.\n' : `Applied: ${applied.join(', ')}\n`)
} catch (error) {
  process.stderr.write(`plant-store migrate: ${(error as Error).message}\n`)
  process.exitCode = 1
} finally {
  await store.close()
}
