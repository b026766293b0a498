/** The embedded store's file as its worker opens it, and what the event loop and worker say to each other. @module */
import SQLite from 'better-sqlite3'

/** Its directory must exist; every INTEGER is read as an exact bigint. `busyTimeoutMs`: SQLite's wait for a lock. */
export function openSqliteFile(file: string, busyTimeoutMs: number): SQLite.Database {
  const database = new SQLite(file, { timeout: busyTimeoutMs })
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.defaultSafeIntegers(true)
  return database
}

export interface WorkerData {
  readonly file: string
  readonly busyTimeoutMs: number
}

/** One compiled query; bigints cross the thread exactly (structured clone). */
export interface WorkerRequest {
  readonly id: number
  readonly sql: string
  readonly parameters: readonly unknown[]
}

/** `error`: SQLite's message and code (`SQLITE_BUSY`, …); an Error's own properties do not cross the thread. */
export type WorkerResponse =
  | {
      readonly id: number
      readonly rows: unknown[]
      readonly changes?: number | bigint
      readonly lastInsertRowid?: number | bigint
      readonly wrote: boolean
      readonly error?: undefined
    }
  | { readonly id: number; readonly error: { readonly message: string; readonly code: string | undefined } }
