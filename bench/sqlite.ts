/**
 * SQLite side of the benchmark: how many of a run's plants a data directory holds
 * (read-only, after the server stopped).
 *
 * @module
 */
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { SQLITE_FILE } from '../service/store/sqlite.ts'

/**
 * Counts the plants stored with ids in [`from`, `from + count`) in the store of `dataDir`.
 * @throws when the file cannot be opened or has no `plant` table.
 */
export function countSqliteRows(dataDir: string, from: bigint, count: bigint): number {
  const database = new SQLite(join(dataDir, SQLITE_FILE), { readonly: true, fileMustExist: true })
  try {
    const row = database
      .prepare('select count(*) as n from plant where id >= ? and id < ?')
      .get(from, from + count) as { n: number }
    return Number(row.n)
  } finally {
    database.close()
  }
}
