/** What each database (`sqlite.ts`, `postgres.ts`) provides under the repository. @module */
import type { Kysely } from 'kysely'
import type { Config } from '../config.ts'
import type { StoreSchema } from './schema.ts'

/** `databaseUrl` is a secret, never logged. */
export interface StoreOptions extends Pick<
  Config,
  'dataDir' | 'databaseUrl' | 'databasePoolSize' | 'databaseStatementTimeoutMs' | 'databaseConnectTimeoutMs'
> {
  readonly onConnectionError: (error: Error) => void
  /** Told once per failure, until a write succeeds. */
  readonly onWriteFailure?: ((error: Error) => void) | undefined
}

/**
 * Nothing was stored; a retry later may succeed.
 * Any query through {@link Store.db} fails with it when the store is unavailable.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError'
}

export interface Store {
  /** Its queries reject with {@link StoreUnavailableError} when `isUnavailable` says so of their error. */
  readonly db: Kysely<StoreSchema>
  readonly dialect: 'sqlite' | 'postgres'
  /** A retry may succeed: {@link StoreUnavailableError}, or a database error that {@link Store.db} turns into one. */
  isUnavailable(error: unknown): boolean
  /** Rejects while the embedded store's disk cannot take a write. */
  ping(): Promise<void>
  /** So schemas of one PostgreSQL database migrate apart. */
  migrationSchema(): Promise<string | undefined>
  close(): Promise<void>
}
