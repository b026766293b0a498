/** The PostgreSQL store: a bounded `pg` Pool with statement, query and connect timeouts. @module */
import type pg from 'pg'
import {
  Kysely,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
  sql,
} from 'kysely'
import { errorCode } from '../errors.ts'
import type { StoreSchema } from './schema.ts'
import { mapUnavailable, type Store, type StoreOptions, StoreUnavailableError } from './store.ts'

/** Past `statement_timeout`: a reachable server cancels first (57014), the client gives up only on a partition. */
export const QUERY_TIMEOUT_MARGIN_MS = 500

/**
 * SQLSTATE 25006, a write refused by a standby: during a failover a connection can reach a node that is not, or not
 * yet, the primary. Nothing was written; that connection is not reused.
 */
const READ_ONLY_SQL_TRANSACTION = '25006'

/** SQLSTATE classes 08 and 53, 57P01–57P03, 57014 and 25006 (PostgreSQL, Appendix A), Node errnos, and pg's own. */
function isPostgresUnavailable(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true
  const code = errorCode(error)
  if (code === READ_ONLY_SQL_TRANSACTION) return true
  if (typeof code === 'string' && /^(08|53|57P0[1-3]|57014)/.test(code)) return true
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true
  const message = error instanceof Error ? error.message : ''
  return PG_UNAVAILABLE.test(message)
}

/** pg's own errors have no code. */
const PG_UNAVAILABLE = new RegExp(
  [
    'timeout exceeded when trying to connect',
    'Connection terminated',
    'connection timeout',
    'Client has encountered a connection error',
    'Query read timeout',
  ].join('|'),
  'i',
)

/**
 * Connects on first use;
 * a statement unanswered past `query_timeout` fails as unavailable and its connection is destroyed.
 */
export function openPostgres(options: StoreOptions): Store {
  const db = new Kysely<StoreSchema>({
    dialect: mapUnavailable(
      new PostgresDialect({
        pool: async () => {
          const { default: pg } = await import('pg')
          const pool = new pg.Pool({
            connectionString: options.databaseUrl,
            max: options.databasePoolSize,
            statement_timeout: options.databaseStatementTimeoutMs,
            query_timeout: options.databaseStatementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
            connectionTimeoutMillis: options.databaseConnectTimeoutMs,
          })
          // Unheard, a dropped connection's 'error' would crash the process.
          pool.on('error', options.onConnectionError)
          pool.on('connect', (client) => client.on('error', options.onConnectionError))
          return discardingBroken(
            pool,
            (error) => error instanceof pg.DatabaseError && errorCode(error) !== READ_ONLY_SQL_TRANSACTION,
          )
        },
      }),
      isPostgresUnavailable,
    ),
  })
  return {
    db,
    dialect: 'postgres',
    isUnavailable: isPostgresUnavailable,
    ping: () => sql`select 1`.execute(db).then(() => undefined),
    migrationSchema: async () =>
      (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema,
    close: () => db.destroy(),
  }
}

/**
 * Releases a connection whose query got no server answer with the error, or a standby's refusal to write, so pg
 * destroys it rather than reuse it mid-query or on a standby.
 */
function discardingBroken(pool: pg.Pool, isServerError: (error: unknown) => boolean): PostgresPool {
  return {
    options: pool.options,
    end: () => pool.end(),
    connect: async () => {
      const client = await pool.connect()
      let broken = false
      const query = async (text: string, parameters: readonly unknown[]) => {
        try {
          return (await client.query(text, [...parameters])) as PostgresQueryResult<unknown>
        } catch (error) {
          broken ||= !isServerError(error)
          throw error
        }
      }
      return { query, release: (destroy?: boolean) => client.release(broken || destroy) } as PostgresPoolClient
    },
  }
}
