/**
 * Opens the store: the one module that knows which database runs. Above it, the
 * repository and the migrations are the same Kysely code for every dialect.
 *
 * - embedded (default): SQLite through better-sqlite3, in `<dataDir>/plants.sqlite3`,
 *   WAL journal with `synchronous=FULL`, so a commit is on disk (fsync) before it
 *   returns; SQLite's file locks keep a second process on the same file correct.
 * - PostgreSQL, when a database URL is given: `pg` Pool with a bounded size, a
 *   statement timeout and a connection (pool acquire) timeout.
 *
 * @module
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase, type SqliteStatement, sql } from 'kysely'
import type { StoreSchema } from './schema.js'

/** Where the store lives and how to reach it. */
export interface StoreOptions {
  /** Directory of the embedded store; created when missing. Unused with PostgreSQL. */
  readonly dataDir: string
  /** `postgres://…` URL; when set, PostgreSQL replaces the embedded store. A secret: never logged. */
  readonly databaseUrl?: string | undefined
  /** Most PostgreSQL connections this process opens. */
  readonly poolSize: number
  /** Milliseconds a PostgreSQL statement may run before the server cancels it. */
  readonly statementTimeoutMs: number
  /** Milliseconds to wait for a PostgreSQL connection (new, or free in a full pool). */
  readonly connectTimeoutMs: number
  /** Told of PostgreSQL connection errors not tied to a query (a dropped connection). */
  readonly onConnectionError: (error: Error) => void
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
  /** Round trip to the store; rejects when it is unreachable (readiness). */
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

/** File name of the embedded store inside the data directory. */
export const SQLITE_FILE = 'plants.sqlite3'

/**
 * Opens the store named by the options: PostgreSQL when `databaseUrl` is set,
 * else the embedded SQLite store (creating its data directory).
 *
 * @throws when the data directory cannot be created. Connections are opened lazily;
 *   an unreachable database shows on first use.
 */
export function openStore(options: StoreOptions): Store {
  return options.databaseUrl === undefined ? openSqlite(options.dataDir) : openPostgres(options)
}

/**
 * Opens the embedded store's file as the store uses it: WAL journal with
 * `synchronous=FULL` (a commit is fsynced before it returns), a 5 s wait for another
 * process's lock, and every INTEGER read as an exact bigint (ids are signed 64-bit).
 *
 * @param file - path of the database file; its directory must exist.
 * @throws SQLite's error when the file cannot be opened.
 */
export function openSqliteFile(file: string): SQLite.Database {
  const database = new SQLite(file, { timeout: 5000 })
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.defaultSafeIntegers(true)
  return database
}

/** SQLite result codes that mean "another connection holds the lock; try later". */
const SQLITE_UNAVAILABLE = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED'])

function openSqlite(dataDir: string): Store {
  mkdirSync(dataDir, { recursive: true })
  const file = join(dataDir, SQLITE_FILE)
  const db = new Kysely<StoreSchema>({
    dialect: new SqliteDialect({ database: () => Promise.resolve(withStatementCache(openSqliteFile(file))) }),
  })
  return {
    db,
    dialect: 'sqlite',
    isUnavailable: (error) => SQLITE_UNAVAILABLE.has((error as { code?: string }).code ?? ''),
    ping: () => sql`select 1`.execute(db).then(() => undefined),
    migrationSchema: () => Promise.resolve(undefined),
    close: () => db.destroy(),
  }
}

/** Most prepared statements kept per connection (a batch of N plants is one statement text per N). */
const STATEMENT_CACHE_SIZE = 256

/**
 * The database as Kysely's SQLite driver sees it (`prepare`, `close`), with each
 * statement text prepared once: Kysely prepares every query it runs again, which
 * showed as a tenth of the store's time in the profile (docs/benchmarks.md).
 */
function withStatementCache(database: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>()
  return {
    close: () => database.close(),
    prepare: (source: string) => {
      let statement = statements.get(source)
      if (statement === undefined) {
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear()
        statements.set(source, (statement = database.prepare(source)))
      }
      return statement as unknown as SqliteStatement
    },
  }
}

/**
 * PostgreSQL SQLSTATE classes and codes that mean the server cannot serve now:
 * 08 connection exception, 53 insufficient resources, 57P01–57P03 shutdown / cannot
 * connect now, 57014 statement timeout (query_canceled).
 */
function isPostgresUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && /^(08|53|57P0[1-3]|57014)/.test(code)) return true
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true // ECONNREFUSED, ETIMEDOUT, ECONNRESET, ...
  const message = error instanceof Error ? error.message : ''
  // pg's own errors have no code: pool acquire timeout, connection ended mid-query.
  return /timeout exceeded when trying to connect|Connection terminated|connection timeout|Client has encountered a connection error/i.test(message)
}

function openPostgres(options: StoreOptions): Store {
  const db = new Kysely<StoreSchema>({
    dialect: new PostgresDialect({
      // pg is loaded on first use, only when PostgreSQL is configured.
      pool: async () => {
        const { default: pg } = await import('pg')
        const pool = new pg.Pool({
          connectionString: options.databaseUrl,
          max: options.poolSize,
          statement_timeout: options.statementTimeoutMs,
          connectionTimeoutMillis: options.connectTimeoutMs,
        })
        // A connection that the server drops emits 'error': on the pool while idle, on
        // the client while checked out (pg only listens on idle ones). Unheard, either
        // would crash the process; the query in flight fails on its own and the pool
        // replaces the connection on next use.
        pool.on('error', options.onConnectionError)
        pool.on('connect', (client) => client.on('error', options.onConnectionError))
        return pool
      },
    }),
  })
  return {
    db,
    dialect: 'postgres',
    isUnavailable: isPostgresUnavailable,
    ping: () => sql`select 1`.execute(db).then(() => undefined),
    migrationSchema: async () => (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]!.schema,
    close: () => db.destroy(),
  }
}
