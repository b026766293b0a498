/**
 * The embedded store's worker thread: owns the one better-sqlite3 connection, so SQLite's busy wait and each
 * commit's fsync block this thread, never the event loop. Runs each {@link WorkerRequest} in order; `null` closes.
 *
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads'
import type SQLite from 'better-sqlite3'
import { openSqliteFile, type WorkerData, type WorkerRequest, type WorkerResponse } from './sqlite-file.ts'

const { file, busyTimeoutMs } = workerData as WorkerData
const database = openSqliteFile(file, busyTimeoutMs)
const port = parentPort!
/** Each text prepared once, as better-sqlite3 intends; a few texts per batch size, up to `GROUP_COMMIT_MAX_BATCH`. */
const prepared = new Map<string, SQLite.Statement>()

port.on('message', (request: WorkerRequest | null) => {
  if (request === null) {
    database.close()
    port.close()
    return
  }
  port.postMessage(run(request))
})

/** `wrote`: a change committed outside a transaction; a replay changes nothing. */
function run({ id, sql, parameters }: WorkerRequest): WorkerResponse {
  try {
    let statement = prepared.get(sql)
    if (statement === undefined) prepared.set(sql, (statement = database.prepare(sql)))
    if (statement.reader) {
      const rows = statement.all(parameters) as unknown[]
      return { id, rows, wrote: !statement.readonly && rows.length > 0 && !database.inTransaction }
    }
    const { changes, lastInsertRowid } = statement.run(parameters)
    return { id, rows: [], changes, lastInsertRowid, wrote: changes > 0 && !database.inTransaction }
  } catch (error) {
    const { message, code } = error as { message: string; code?: unknown }
    return { id, error: { message, code: typeof code === 'string' ? code : undefined } }
  }
}
