/**
 * The PostgreSQL store: a bounded `pg` Pool with statement and connect timeouts.
 * @module
 */
import { Kysely, PostgresDialect, sql } from './kysely.js'
import type { StoreSchema } from './schema.js'
import type { Store, StoreOptions } from './store.js'

/**
 * SQLSTATEs meaning the server cannot serve now: 08 connection exception, 53 insufficient
 * resources, 57P01–57P03 shutdown or cannot connect now, 57014 statement timeout.
 */
function isPostgresUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && /^(08|53|57P0[1-3]|57014)/.test(code)) return true
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true // ECONNREFUSED, ETIMEDOUT, ECONNRESET, ...
  const message = error instanceof Error ? error.message : ''
  // pg's own errors have no code: pool acquire timeout, connection ended mid-query.
  return /timeout exceeded when trying to connect|Connection terminated|connection timeout|Client has encountered a connection error/i.test(message)
}

/** Opens the PostgreSQL store; connections are opened on first use. */
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
          connectionTimeoutMillis: options.databaseConnectTimeoutMs,
        })
        // A dropped connection emits 'error' on the pool while idle, on the client while checked
        // out (pg only listens on idle ones); unheard, it would crash the process.
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
