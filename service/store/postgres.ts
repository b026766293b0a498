/**
 * The PostgreSQL store: a bounded `pg` Pool with statement, query and connect timeouts.
 * @module
 */
import type pg from 'pg'
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult, sql } from 'kysely'
import type { StoreSchema } from './schema.js'
import type { Store, StoreOptions } from './store.js'

/**
 * How much longer than the server's `statement_timeout` the client waits for an answer:
 * a server it can reach cancels first (SQLSTATE 57014, the connection kept); the client
 * gives up only when no answer can come (a network partition).
 */
export const QUERY_TIMEOUT_MARGIN_MS = 500

/**
 * SQLSTATEs meaning the server cannot serve now: 08 connection exception, 53 insufficient
 * resources, 57P01–57P03 shutdown or cannot connect now, 57014 statement timeout.
 */
function isPostgresUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && /^(08|53|57P0[1-3]|57014)/.test(code)) return true
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true // ECONNREFUSED, ETIMEDOUT, ECONNRESET, ...
  const message = error instanceof Error ? error.message : ''
  return PG_UNAVAILABLE.test(message)
}

/** pg's own errors, which have no code: pool acquire timeout, connection ended mid-query, `query_timeout`. */
const PG_UNAVAILABLE = /timeout exceeded when trying to connect|Connection terminated|connection timeout|Client has encountered a connection error|Query read timeout/i

/**
 * Opens the PostgreSQL store; connections are opened on first use. A statement still
 * unanswered after `databaseStatementTimeoutMs` + {@link QUERY_TIMEOUT_MARGIN_MS} (pg's
 * `query_timeout`) fails as unavailable and its connection is destroyed: a server that
 * cannot be reached cannot apply its `statement_timeout`.
 */
export function openPostgres(options: StoreOptions): Store {
  const db = new Kysely<StoreSchema>({
    dialect: new PostgresDialect({
      // pg is loaded on first use, only when PostgreSQL is configured.
      pool: async () => {
        const { default: pg } = await import('pg')
        const pool = new pg.Pool({
          connectionString: options.databaseUrl,
          max: options.databasePoolSize,
          statement_timeout: options.databaseStatementTimeoutMs,
          query_timeout: options.databaseStatementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
          connectionTimeoutMillis: options.databaseConnectTimeoutMs,
        })
        // A dropped connection emits 'error' on the pool while idle, on the client while checked
        // out (pg only listens on idle ones); unheard, it would crash the process.
        pool.on('error', options.onConnectionError)
        pool.on('connect', (client) => client.on('error', options.onConnectionError))
        return discardingBroken(pool, (error) => error instanceof pg.DatabaseError)
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

/**
 * `pool` as Kysely's PostgresDialect uses it, except that a connection whose query failed
 * without the server's answer (`isServerError` false: pg's `query_timeout`, a lost
 * connection) is released with that error, which makes pg's pool destroy it instead of
 * handing it out again with the query still pending (Kysely releases without an error).
 */
function discardingBroken(pool: pg.Pool, isServerError: (error: unknown) => boolean): PostgresPool {
  return {
    options: pool.options,
    end: () => pool.end(),
    connect: async () => {
      const client = await pool.connect()
      let failure: Error | undefined
      const query = async (text: string, parameters: readonly unknown[]) => {
        try {
          return (await client.query(text, parameters as unknown[])) as PostgresQueryResult<unknown>
        } catch (error) {
          if (!isServerError(error)) failure = error as Error
          throw error
        }
      }
      return { query, release: (destroy?: boolean) => client.release(failure ?? destroy) } as PostgresPoolClient
    },
  }
}
