/**
 * The embedded store's worker thread: owns the one better-sqlite3 connection, so SQLite's busy wait and each
 * commit's fsync block this thread, never the event loop. Runs each {@link WorkerRequest} in order; `null` closes.
 * Also how the file is opened, which `sqlite.ts` checks once on the event loop before the worker starts.
 *
 * @module
 */
import { parentPort, type MessagePort, workerData } from 'node:worker_threads'
import SQLite from 'better-sqlite3'
import type { PlantRecord } from './store.ts'

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

/**
 * A compiled query of Kysely's, or a batch of plants to insert (distinct ids, ascending) with statements prepared
 * once here: no SQL text crosses per batch. Bigints cross the thread exactly (structured clone).
 */
export type WorkerRequest =
  | { readonly id: number; readonly sql: string; readonly parameters: readonly unknown[] }
  | { readonly id: number; readonly plants: readonly PlantRecord[] }

/**
 * `rows`: a query's rows, or the plants already stored under a batch's ids; `wrote`: a change committed outside a
 * transaction (a statement without rows, or a batch). `error`: SQLite's message and code (`SQLITE_BUSY`, …); an
 * Error's own properties do not cross.
 */
export type WorkerResponse =
  | {
      readonly id: number
      readonly rows: unknown[]
      readonly changes: number | bigint | undefined
      readonly lastInsertRowid: number | bigint | undefined
      readonly wrote: boolean
      readonly error?: undefined
    }
  | { readonly id: number; readonly error: { readonly message: string; readonly code: string | undefined } }

const INSERT = 'insert into plant (id, name, tag) values (?, ?, ?) on conflict do nothing'
const FIND = 'select id, name, tag from plant where id = ?'

/** Answers `port`'s requests on a connection to `data.file` until `null`. */
function serve(port: MessagePort, { file, busyTimeoutMs }: WorkerData): void {
  const database = openSqliteFile(file, busyTimeoutMs)
  /** Each text prepared once, as better-sqlite3 intends. */
  const prepared = new Map<string, SQLite.Statement>()
  const statement = (sql: string) => {
    let found = prepared.get(sql)
    if (found === undefined) prepared.set(sql, (found = database.prepare(sql)))
    return found
  }
  // Prepared at the first batch, once the migrations made the table.
  let plantStatements:
    | { insert: SQLite.Statement<[bigint, string, string | null]>; find: SQLite.Statement<[bigint], PlantRecord> }
    | undefined
  // BEGIN IMMEDIATE: the write lock (and its busy wait) first; a failure rolls the whole batch back.
  const insertNew = database.transaction((plants: readonly PlantRecord[]) => {
    const { insert, find } = (plantStatements ??= { insert: database.prepare(INSERT), find: database.prepare(FIND) })
    const existing: PlantRecord[] = []
    for (const { id, name, tag } of plants) {
      if (insert.run(id, name, tag).changes === 0) existing.push(...find.all(id))
    }
    return existing
  }).immediate
  /** Batches that came during a transaction of Kysely's: they run after it, never inside it. */
  let deferred: WorkerRequest[] = []

  const run = (request: WorkerRequest): WorkerResponse => {
    const { id } = request
    try {
      if ('plants' in request) {
        const rows = insertNew(request.plants)
        return { id, rows, changes: undefined, lastInsertRowid: undefined, wrote: rows.length < request.plants.length }
      }
      const query = statement(request.sql)
      // A reader's write (RETURNING) is not counted: the batches and the probe tell the disk's state.
      if (query.reader)
        return { id, rows: query.all(request.parameters), changes: undefined, lastInsertRowid: undefined, wrote: false }
      const { changes, lastInsertRowid } = query.run(request.parameters)
      return { id, rows: [], changes, lastInsertRowid, wrote: changes > 0 && !database.inTransaction }
    } catch (error) {
      const { message, code } = error instanceof SQLite.SqliteError ? error : { message: String(error), code: '' }
      return { id, error: { message, code: code || undefined } }
    }
  }

  port.on('message', (request: WorkerRequest | null) => {
    if (request === null) {
      database.close()
      port.close()
      return
    }
    if ('plants' in request && database.inTransaction) {
      deferred.push(request)
      return
    }
    port.postMessage(run(request))
    if (deferred.length > 0 && !database.inTransaction) {
      const ready = deferred
      deferred = []
      for (const batch of ready) port.postMessage(run(batch))
    }
  })
}

if (parentPort !== null) serve(parentPort, workerData)
