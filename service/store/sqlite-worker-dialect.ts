/**
 * Kysely's SQLite dialect with its one connection on a worker thread (`sqlite-worker.ts`): the event loop only posts.
 * @module
 */
import type { Worker } from 'node:worker_threads'
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
import type { WorkerResponse } from './sqlite-file.ts'
import { StoreUnavailableError } from './store.ts'

export interface SqliteWorkerDialectConfig {
  /** Starts a worker running `sqlite-worker.ts`; called on first use, and again after one stopped. */
  readonly startWorker: () => Worker
  /** Each statement's outcome: `wrote` a change outside a transaction, or its error. */
  readonly onResult?: (wrote: boolean, error?: Error) => void
  /** A worker that failed or exited by itself; its queries were rejected with {@link StoreUnavailableError}. */
  readonly onWorkerGone?: (error: Error) => void
}

export class SqliteWorkerDialect implements Dialect {
  private readonly config: SqliteWorkerDialectConfig

  constructor(config: SqliteWorkerDialectConfig) {
    this.config = config
  }

  createAdapter = () => new SqliteAdapter()
  createDriver = (): Driver => new SqliteWorkerDriver(new WorkerConnection(this.config))
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

interface Pending {
  readonly resolve: (result: QueryResult<unknown>) => void
  readonly reject: (error: unknown) => void
}

/** Posts each compiled query to the worker; keeps the process alive only while one is pending. */
class WorkerConnection implements DatabaseConnection {
  private readonly config: SqliteWorkerDialectConfig
  private worker: Worker | undefined
  private readonly pending = new Map<number, Pending>()
  private nextId = 0
  private closed = false
  /** The worker whose connection holds the open transaction: no statement of it may run on another. */
  private transactionOn: Worker | undefined

  constructor(config: SqliteWorkerDialectConfig) {
    this.config = config
  }

  executeQuery<R>({ sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    if (this.transactionOn !== undefined && this.transactionOn !== this.worker)
      return Promise.reject(new StoreUnavailableError(STOPPED_IN_TRANSACTION))
    const worker = (this.worker ??= this.start())
    return new Promise((resolve, reject) => {
      const id = this.nextId++
      if (this.pending.size === 0) worker.ref()
      this.pending.set(id, { resolve: resolve as Pending['resolve'], reject })
      worker.postMessage({ id, sql, parameters })
    })
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

  private start(): Worker {
    const worker = this.config.startWorker()
    worker.unref()
    worker.on('message', (response: WorkerResponse) => this.answer(worker, response))
    worker.on('error', (error) => this.gone(worker, error))
    worker.on('exit', (code) => this.gone(worker, new Error(`The store's worker exited with code ${code}`)))
    return worker
  }

  private answer(worker: Worker, response: WorkerResponse): void {
    const pending = this.pending.get(response.id)!
    this.pending.delete(response.id)
    if (this.pending.size === 0) worker.unref()
    if (response.error !== undefined) {
      const error = Object.assign(new Error(response.error.message), { name: 'SqliteError', code: response.error.code })
      this.config.onResult?.(false, error)
      pending.reject(error)
      return
    }
    const { rows, changes, lastInsertRowid, wrote } = response
    this.config.onResult?.(wrote)
    pending.resolve({
      rows,
      numAffectedRows: changes === undefined ? undefined : BigInt(changes),
      insertId: lastInsertRowid === undefined ? undefined : BigInt(lastInsertRowid),
    })
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
