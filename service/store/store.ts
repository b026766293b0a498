/**
 * What every database under the repository provides: the Kysely instance and what
 * only the dialect knows (which errors mean "unavailable", a round trip, where the
 * migration tables live). `sqlite.ts` and `postgres.ts` implement it; `database.ts`
 * picks one.
 *
 * @module
 */
import type { Kysely } from 'kysely'
import type { Config } from '../config.js'
import type { StoreSchema } from './schema.js'

/**
 * Where the store lives and how to reach it: `dataDir` (created when missing; unused
 * with PostgreSQL), and `databaseUrl` (a secret, never logged) with its pool's
 * settings, which select PostgreSQL instead of the embedded store.
 */
export interface StoreOptions
  extends Pick<Config, 'dataDir' | 'databaseUrl' | 'databasePoolSize' | 'databaseStatementTimeoutMs' | 'databaseConnectTimeoutMs'> {
  /** Told of PostgreSQL connection errors not tied to a query (a dropped connection). */
  readonly onConnectionError: (error: Error) => void
  /**
   * Told when the embedded store's writes start failing for its disk (full, or an
   * I/O error): once, with SQLite's error, until a write succeeds again.
   */
  readonly onWriteFailure?: ((error: Error) => void) | undefined
}

/** An open store: the Kysely instance and what only the dialect knows. */
export interface Store {
  readonly db: Kysely<StoreSchema>
  readonly dialect: 'sqlite' | 'postgres'
  /**
   * Whether an error means the store cannot be reached or is overloaded now (a retry
   * later may succeed), rather than a fault of the service.
   */
  isUnavailable(error: unknown): boolean
  /**
   * Round trip to the store; rejects when it is unreachable (readiness). The
   * embedded store also rejects while its disk cannot take a write: from a write
   * that failed for the disk until a write succeeds, or until a probe write of
   * a probe of 64 KiB into the data directory does.
   */
  ping(): Promise<void>
  /**
   * Schema that holds the migration tables: PostgreSQL's `current_schema()` (the
   * first of `search_path`), so several schemas in one database migrate apart;
   * `undefined` for SQLite, which has none.
   */
  migrationSchema(): Promise<string | undefined>
  /** Closes every connection. */
  close(): Promise<void>
}
