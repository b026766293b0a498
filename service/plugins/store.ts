/** The store, opened and migrated at start-up; creates go through a group commit. @module */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { AppConfig } from '../app.ts'
import { openStore } from '../store/database.ts'
import { migrateToLatest } from '../store/migrate.ts'
import { GroupCommit, PlantRepository } from '../store/plant-repository.ts'
import type { Store } from '../store/store.ts'

declare module 'fastify' {
  interface FastifyInstance {
    readonly store: Store
    /** `writer` groups concurrent creates into one transaction. */
    readonly plants: { readonly repository: PlantRepository; readonly writer: GroupCommit }
  }
}

/** Rejects with a `ConfigError` when the store cannot be opened; `app.ready()` with a `MigrationError`. */
async function store(app: FastifyInstance, config: AppConfig): Promise<void> {
  const store = await openStore({
    ...config,
    onConnectionError: (err) => app.log.warn({ err }, 'store connection lost'),
    /* c8 ignore next -- a failing disk needs root: test/services/file-systems.test.ts */
    onWriteFailure: (err) => app.log.error({ err }, 'store cannot write to its disk; creates get 503 until it can'),
  })
  app.addHook('onClose', () => store.close())
  // Once the app is built, so no build work holds the event loop while PostgreSQL's connect timeout runs.
  if (config.migrateOnStart)
    app.addHook('onReady', async () => {
      try {
        await migrateToLatest(store)
      } catch (error) {
        await store.close()
        throw error
      }
    })
  const repository = new PlantRepository(store)
  const writer = new GroupCommit(repository, {
    maxBatch: config.groupCommitMaxBatch,
    maxInFlight: store.dialect === 'sqlite' ? 1 : config.databasePoolSize,
    onBatch: app.metrics.observeBatch,
    tracer: app.hasDecorator('tracing') ? app.tracing.batchTracer(store.dialect) : undefined,
  })
  app.decorate('store', store)
  app.decorate('plants', { repository, writer })
}

export default fp(store, { name: 'store', dependencies: ['metrics'] })
