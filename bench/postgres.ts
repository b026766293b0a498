/**
 * PostgreSQL side of the benchmark: is the server there, did the service really
 * store in it, and removal of the benchmark's own rows afterwards (its id range
 * only; no other row is touched).
 *
 * @module
 */
import pg from 'pg'

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

/**
 * Checks that `databaseUrl` points at this machine (the benchmark never leaves loopback).
 * @throws when the URL is invalid or its host is not loopback.
 */
export function assertLoopback(databaseUrl: string): void {
  const host = new URL(databaseUrl).hostname
  if (!LOOPBACK.has(host)) throw new Error(`refusing a non-loopback database host (${host})`)
}

async function withClient<T>(databaseUrl: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis: 3000,
    statement_timeout: 30_000,
  })
  await client.connect()
  try {
    return await use(client)
  } finally {
    await client.end()
  }
}

/**
 * @returns `undefined` when PostgreSQL answers a query, else why not (e.g. `ECONNREFUSED`).
 */
export async function postgresUnavailable(databaseUrl: string): Promise<string | undefined> {
  try {
    assertLoopback(databaseUrl)
    await withClient(databaseUrl, (client) => client.query('SELECT 1'))
    return undefined
  } catch (error) {
    const { code, message } = error as { code?: string; message: string }
    return `PostgreSQL unreachable (${code ?? message})`
  }
}

/**
 * Whether a plant with this id is in PostgreSQL's `plant` table; false when the
 * table does not exist. Tells a service that stores in PostgreSQL from one that
 * ignored `DATABASE_URL` and answered from its embedded store.
 */
export async function storedInPostgres(databaseUrl: string, id: bigint): Promise<boolean> {
  return withClient(databaseUrl, async (client) => {
    try {
      const result = await client.query('SELECT 1 FROM plant WHERE id = $1', [String(id)])
      return result.rowCount === 1
    } catch (error) {
      if ((error as { code?: string }).code === '42P01') return false // undefined_table
      throw error
    }
  })
}

/**
 * Deletes the benchmark's rows: ids in [`from`, `from + count`).
 * @returns how many rows were deleted.
 */
export async function removeBenchRows(databaseUrl: string, from: bigint, count: bigint): Promise<number> {
  return withClient(databaseUrl, async (client) => {
    const result = await client.query('DELETE FROM plant WHERE id >= $1 AND id < $2', [
      String(from),
      String(from + count),
    ])
    return result.rowCount ?? 0
  })
}

/**
 * Counts the plants stored with ids in [`from`, `from + count`).
 * @returns the number of rows; 0 when the table does not exist.
 */
export async function countPostgresRows(databaseUrl: string, from: bigint, count: bigint): Promise<number> {
  return withClient(databaseUrl, async (client) => {
    try {
      const result = await client.query<{ n: string }>('SELECT count(*) AS n FROM plant WHERE id >= $1 AND id < $2', [
        String(from),
        String(from + count),
      ])
      return Number(result.rows[0]?.n ?? 0)
    } catch (error) {
      if ((error as { code?: string }).code === '42P01') return 0 // undefined_table
      throw error
    }
  })
}
