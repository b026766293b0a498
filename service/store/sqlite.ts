/**
 * The embedded SQLite store, its connection on a worker thread (`sqlite-worker.ts`): the event loop never waits on
 * SQLite's lock or its fsync, and only posts. A create's batch goes as its plants, to statements the worker prepared
 * once; Kysely's queries (migrations, probes) go compiled. A failing disk is 503 until it writes again
 * (docs/operations.md, "Full disk (embedded store)").
 *
 * @module
 */
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  Kysely,
  type QueryResult,
  sql,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
import { ConfigError } from '../config.ts'
import { asError, errorCode } from '../errors.ts'
import type { StoreSchema } from './schema.ts'
import { openSqliteFile, type WorkerData, type WorkerRequest, type WorkerResponse } from './sqlite-worker.ts'
import {
  mapUnavailable,
  type PlantRecord,
  type Store,
  type StoreOptions,
  StoreUnavailableError,
  unavailableAs,
} from './store.ts'

export const SQLITE_FILE = 'plants.sqlite3'

/** Room for a few commits. */
const PROBE_BYTES = 64 * 1024

export const PROBE_FILE = '.plant-store-probe'

/**
 * SQLite's wait for another process's lock, on the worker. A create can wait for the batch ahead of it and then its
 * own: twice this stays well below 8 s (docs/operations.md, "Storage").
 */
export const BUSY_TIMEOUT_MS = 2500

/** The worker's module beside this one: `.ts` when run from source, `.js` from `dist/`. */
const WORKER_URL = new URL(`./sqlite-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url)

const SQLITE_BUSY = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED'])

/** The disk failed, not the service: a retry may succeed. */
function isDiskFailure(error: unknown): boolean {
  const code = codeOf(error)
  return code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')
}

/** An error's `code` when it is a string, else ''. */
function codeOf(error: unknown): string {
  const code = errorCode(error)
  return typeof code === 'string' ? code : ''
}

/** Failing from a failed write until a write or a probe succeeds. */
class DiskState {
  private failure: Error | undefined
  private readonly dataDir: string
  private readonly onWriteFailure: ((error: Error) => void) | undefined

  constructor(dataDir: string, onWriteFailure: ((error: Error) => void) | undefined) {
    this.dataDir = dataDir
    this.onWriteFailure = onWriteFailure
  }

  wrote(): void {
    this.failure = undefined
  }

  // A failing disk needs root: test/services/file-systems.test.ts.
  /* c8 ignore start */
  failed(error: Error): void {
    if (this.failure === undefined) this.onWriteFailure?.(error)
    this.failure = error
  }
  /* c8 ignore stop */

  /** After a failure, writes and fsyncs a probe file. @throws the probe's error (ENOSPC, EIO, …). */
  async check(): Promise<void> {
    if (this.failure === undefined) return
    /* c8 ignore start -- after a disk failure only: see failed() */
    const file = join(this.dataDir, PROBE_FILE)
    try {
      const handle = await open(file, 'w')
      try {
        await handle.write(Buffer.alloc(PROBE_BYTES))
        await handle.sync()
      } finally {
        await handle.close()
      }
    } finally {
      await rm(file, { force: true })
    }
    this.wrote()
  }
  /* c8 ignore stop */
}

/** @throws {ConfigError} naming `DATA_DIR` and why, when this process cannot use it (before the worker starts). */
export function openSqlite(options: StoreOptions): Store {
  const file = join(options.dataDir, SQLITE_FILE)
  checkUsable(options.dataDir, file)
  const disk = new DiskState(options.dataDir, options.onWriteFailure)
  const isUnavailable = (error: unknown) =>
    error instanceof StoreUnavailableError || SQLITE_BUSY.has(codeOf(error)) || isDiskFailure(error)
  const connection = new WorkerConnection({
    startWorker: () => startSqliteWorker(file),
    onResult: (wrote, error) => {
      if (wrote) disk.wrote()
      /* c8 ignore next -- a failing disk needs root: test/services/file-systems.test.ts */
      if (error !== undefined && isDiskFailure(error)) disk.failed(error)
    },
    onWorkerGone: options.onConnectionError,
  })
  const db = new Kysely<StoreSchema>({ dialect: mapUnavailable(new SqliteWorkerDialect(connection), isUnavailable) })
  return {
    db,
    dialect: 'sqlite',
    isUnavailable,
    insertNew: (plants) =>
      connection.insertNew(plants).catch((error: unknown) => Promise.reject(unavailableAs(error, isUnavailable))),
    ping: async () => {
      await sql`select 1`.execute(db)
      await disk.check()
    },
    migrationSchema: () => Promise.resolve(undefined),
    close: () => db.destroy(),
  }
}

/** A worker owning a connection to `file`, which must be usable; see {@link WorkerConnection}. */
export function startSqliteWorker(file: string): Worker {
  return new Worker(WORKER_URL, { workerData: { file, busyTimeoutMs: BUSY_TIMEOUT_MS } satisfies WorkerData })
}

/** Checks write access first (SQLite would open the file read-only, and fail later), then opens and closes it once. */
function checkUsable(dataDir: string, file: string): void {
  try {
    try {
      mkdirSync(dataDir, { recursive: true })
    } catch {
      // Recursive mkdir reports ENOENT for any failure; a plain one tells the reason.
      mkdirSync(dataDir)
    }
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK)
    for (const path of [file, `${file}-wal`, `${file}-shm`]) {
      if (existsSync(path)) accessSync(path, constants.R_OK | constants.W_OK)
    }
    openSqliteFile(file, BUSY_TIMEOUT_MS).close()
  } catch (error) {
    const { message } = asError(error)
    const code = codeOf(error)
    const reason = code.startsWith('SQLITE_') ? `${SQLITE_FILE}: ${message} (${code})` : message
    throw new ConfigError(`Refusing to start: DATA_DIR (${dataDir}) cannot be used: ${reason}`, { cause: error })
  }
}

interface WorkerConnectionConfig {
  /** Starts a worker running `sqlite-worker.ts`; called on first use, and again after one stopped. */
  readonly startWorker: () => Worker
  /** Each request's outcome: `wrote` a change outside a transaction, or its error. */
  readonly onResult?: (wrote: boolean, error?: Error) => void
  /** A worker that failed or exited by itself; its requests were rejected with {@link StoreUnavailableError}. */
  readonly onWorkerGone?: (error: Error) => void
}

/** Kysely's SQLite dialect on a {@link WorkerConnection}. */
export class SqliteWorkerDialect implements Dialect {
  private readonly connection: WorkerConnection

  constructor(connection: WorkerConnection) {
    this.connection = connection
  }

  createAdapter = () => new SqliteAdapter()
  createDriver = (): Driver => new SqliteWorkerDriver(this.connection)
  createIntrospector = (db: Parameters<Dialect['createIntrospector']>[0]) => new SqliteIntrospector(db)
  createQueryCompiler = () => new SqliteQueryCompiler()
}

/** One connection: Kysely lends it to one user at a time (SQLite's adapter), so a transaction is never interleaved. */
class SqliteWorkerDriver implements Driver {
  private readonly connection: WorkerConnection

  constructor(connection: WorkerConnection) {
    this.connection = connection
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection
  }

  beginTransaction(): Promise<void> {
    return this.connection.begin()
  }

  commitTransaction(): Promise<void> {
    return this.connection.end('commit')
  }

  rollbackTransaction(): Promise<void> {
    return this.connection.end('rollback')
  }

  async releaseConnection(): Promise<void> {}

  destroy(): Promise<void> {
    return this.connection.close()
  }
}

const STOPPED_IN_TRANSACTION = "The store's worker stopped during the transaction"

type Answer = Exclude<WorkerResponse, { readonly error: object }>

interface Pending {
  readonly resolve: (answer: Answer) => void
  readonly reject: (error: unknown) => void
}

/**
 * The one connection, in the worker: posts each request and settles it with the answer; keeps the process alive only
 * while one is pending. A batch posted during a transaction of Kysely's runs after it (the worker defers it).
 */
export class WorkerConnection implements DatabaseConnection {
  private readonly config: WorkerConnectionConfig
  private worker: Worker | undefined
  private readonly pending = new Map<number, Pending>()
  private nextId = 0
  private closed = false
  /** The worker whose connection holds the open transaction: no statement of it may run on another. */
  private transactionOn: Worker | undefined

  constructor(config: WorkerConnectionConfig) {
    this.config = config
  }

  /** @returns the rows already stored under the ids of `plants`; see {@link Store.insertNew}. */
  async insertNew(plants: readonly PlantRecord[]): Promise<ReadonlyMap<bigint, PlantRecord>> {
    const { rows } = await this.post((id) => ({ id, plants }))
    const existing = new Map<bigint, PlantRecord>()
    for (const row of rows) if (isPlant(row)) existing.set(row.id, row)
    return existing
  }

  async executeQuery<R>({ sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    if (this.transactionOn !== undefined && this.transactionOn !== this.worker)
      throw new StoreUnavailableError(STOPPED_IN_TRANSACTION)
    const { rows, changes, lastInsertRowid } = await this.post((id) => ({ id, sql, parameters }))
    return {
      // Kysely types each query's rows; SQLite gives them untyped.
      rows: rows as R[],
      numAffectedRows: changes === undefined ? undefined : BigInt(changes),
      insertId: lastInsertRowid === undefined ? undefined : BigInt(lastInsertRowid),
    }
  }

  async begin(): Promise<void> {
    await this.executeQuery(CompiledQuery.raw('begin'))
    this.transactionOn = this.worker
  }

  /**
   * A transaction whose worker stopped was rolled back with its connection: its commit fails as unavailable, its
   * rollback has nothing left to do. A failed commit keeps it open for the rollback that follows.
   */
  async end(statement: 'commit' | 'rollback'): Promise<void> {
    const lost = this.transactionOn !== undefined && this.transactionOn !== this.worker
    if (lost && statement === 'commit') throw new StoreUnavailableError(STOPPED_IN_TRANSACTION)
    try {
      if (!lost) await this.executeQuery(CompiledQuery.raw(statement))
    } finally {
      if (statement === 'rollback') this.transactionOn = undefined
    }
    this.transactionOn = undefined
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('The embedded store does not stream queries')
  }

  /** Closes the database in the worker (so the last connection removes the WAL file), then waits for it to exit. */
  async close(): Promise<void> {
    this.closed = true
    const worker = this.worker
    if (worker === undefined) return
    worker.ref()
    const exited = new Promise((resolve) => worker.once('exit', resolve))
    worker.postMessage(null)
    await exited
  }

  private post(request: (id: number) => WorkerRequest): Promise<Answer> {
    const worker = (this.worker ??= this.start())
    return new Promise((resolve, reject) => {
      const id = this.nextId++
      if (this.pending.size === 0) worker.ref()
      this.pending.set(id, { resolve, reject })
      worker.postMessage(request(id))
    })
  }

  private start(): Worker {
    const worker = this.config.startWorker()
    worker.unref()
    worker.on('message', (response: WorkerResponse) => this.answer(worker, response))
    worker.on('error', (error) => this.gone(worker, error))
    worker.on('exit', (code) => this.gone(worker, new Error(`The store's worker exited with code ${code}`)))
    return worker
  }

  private answer(worker: Worker, response: WorkerResponse): void {
    const pending = this.pending.get(response.id)
    this.pending.delete(response.id)
    if (this.pending.size === 0) worker.unref()
    if (response.error !== undefined) {
      const error = Object.assign(new Error(response.error.message), { name: 'SqliteError', code: response.error.code })
      this.config.onResult?.(false, error)
      pending?.reject(error)
      return
    }
    this.config.onResult?.(response.wrote)
    pending?.resolve(response)
  }

  /** Fails what it had pending; the next query starts a new worker. */
  private gone(worker: Worker, cause: Error): void {
    if (this.worker !== worker) return
    this.worker = undefined
    const error = new StoreUnavailableError("The store's worker stopped", { cause })
    for (const pending of this.pending.values()) pending.reject(error)
    this.pending.clear()
    if (!this.closed) this.config.onWorkerGone?.(cause)
  }
}

/** A row of the worker's plant statements. */
function isPlant(row: unknown): row is PlantRecord {
  return typeof row === 'object' && row !== null && 'id' in row && typeof row.id === 'bigint'
}
