/**
 * The benchmark's view of the stores, after a server stopped: how many of a run's plants a store holds, and the
 * removal of the run's rows from PostgreSQL (its id range only). Loopback PostgreSQL only.
 *
 * @module
 */
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'

/** The embedded store's file in `DATA_DIR` (docs/configuration.md). */
export const SQLITE_FILE = 'plants.sqlite3'

/** @throws when `databaseUrl`'s host is not loopback. */
export function assertLoopback(databaseUrl: string): void {
  const host = new URL(databaseUrl).hostname
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(host)) throw new Error(`refusing a non-loopback database (${host})`)
}

/** Rows of `table` with ids in [`from`, `from + count`) in the SQLite store of `dataDir`. */
export function countSqliteRows(dataDir: string, table: string, from: bigint, count: bigint): number {
  const database = new SQLite(join(dataDir, SQLITE_FILE), { readonly: true, fileMustExist: true })
  try {
    const sql = `select count(*) as n from ${table} where id >= ? and id < ?`
    return Number((database.prepare(sql).get(from, from + count) as { n: number }).n)
  } finally {
    database.close()
  }
}

/** Runs one query on a fresh connection. */
async function query(databaseUrl: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  assertLoopback(databaseUrl)
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3000 })
  await client.connect()
  try {
    return await client.query(text, values)
  } finally {
    await client.end()
  }
}

/** `undefined` when PostgreSQL answers, else why not. */
export async function postgresUnavailable(databaseUrl: string): Promise<string | undefined> {
  try {
    await query(databaseUrl, 'select 1')
    return undefined
  } catch (error) {
    const { code, message } = error as { code?: string; message: string }
    return `PostgreSQL unreachable (${code ?? message})`
  }
}

/** Rows of `table` with ids in [`from`, `from + count`); 0 when the table does not exist. */
export async function countPostgresRows(databaseUrl: string, table: string, from: bigint, count: bigint) {
  const sql = `select count(*) as n from ${table} where id >= $1 and id < $2`
  const result = await query(databaseUrl, sql, [String(from), String(from + count)]).catch(
    (error: { code?: string }) => {
      if (error.code === '42P01') return { rows: [{ n: 0 }] } // undefined_table
      throw error
    },
  )
  return Number((result.rows[0] as { n: string | number }).n)
}

/** Deletes the rows of `tables` with ids in [`from`, `from + count`). @returns how many. */
export async function removePostgresRows(databaseUrl: string, tables: readonly string[], from: bigint, count: bigint) {
  let removed = 0
  for (const table of tables) {
    const sql = `delete from ${table} where id >= $1 and id < $2`
    const result = await query(databaseUrl, sql, [String(from), String(from + count)]).catch(() => undefined)
    removed += result?.rowCount ?? 0
  }
  return removed
}
