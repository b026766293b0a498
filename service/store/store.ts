/**
 * What each database provides under the repository: `sqlite.ts` and `postgres.ts`
 * implement it, `database.ts` picks one.
 * @module
 */
import type { Kysely } from 'kysely'
import type { Config } from '../config.js'
import type { StoreSchema } from './schema.js'

/** Where the store lives; `databaseUrl` (a secret, never logged) selects PostgreSQL. */
export interface StoreOptions
  extends Pick<Config, 'dataDir' | 'databaseUrl' | 'databasePoolSize' | 'databaseStatementTimeoutMs' | 'databaseConnectTimeoutMs'> {
  /** Told of PostgreSQL connection errors not tied to a query (a dropped connection). */
  readonly onConnectionError: (error: Error) => void
  /** Told once when the embedded store's writes start failing for its disk, until one succeeds. */
  readonly onWriteFailure?: ((error: Error) => void) | undefined
}

/** An open store: the Kysely instance and what only the dialect knows. */
export interface Store {
  readonly db: Kysely<StoreSchema>
  readonly dialect: 'sqlite' | 'postgres'
  /** Whether an error means the store is unreachable or overloaded now (a retry may succeed). */
  isUnavailable(error: unknown): boolean
  /** Round trip (readiness); rejects when unreachable or, embedded, while its disk cannot take a write. */
  ping(): Promise<void>
  /** PostgreSQL's `current_schema()`, so schemas of one database migrate apart; none for SQLite. */
  migrationSchema(): Promise<string | undefined>
  close(): Promise<void>
}
