/**
 * The embedded SQLite store on node-sqlite3, whose statements run on libuv's thread pool: the event loop never waits
 * on SQLite's lock or its fsync, and no second V8 isolate is needed for that. Every statement, a create's batch too,
 * is a compiled query of Kysely's. A failing disk is 503 until it writes again (docs/operations.md,
 * "Full disk (embedded store)").
 *
 * @module
 */
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import {
  type CompiledQuery,
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
import sqlite3 from 'sqlite3'
import { ConfigError } from '../config.ts'
import { asError, errorCode } from '../errors.ts'
import type { StoreSchema } from './schema.ts'
import { mapUnavailable, type Store, type StoreOptions, StoreUnavailableError } from './store.ts'

/** The database's file name in `DATA_DIR`. */
export const SQLITE_FILE = 'plants.sqlite3'

/** Room for a few commits. */
const PROBE_BYTES = 64 * 1024

/** A file in `DATA_DIR` written, fsynced and removed after a disk failure, to learn whether the disk takes a commit. */
export const PROBE_FILE = '.plant-store-probe'

/**
 * SQLite's wait for another process's lock, on a thread of the pool. A create can wait for the batch ahead of it and
 * then its own: about 5 s at most (docs/operations.md, "Storage").
 */
export const BUSY_TIMEOUT_MS = 2500

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

/**
 * Opens the store in `DATA_DIR`.
 * @throws {ConfigError} naming `DATA_DIR` and why, when this process cannot use it or its file is not a database.
 */
export async function openSqlite(options: StoreOptions): Promise<Store> {
  const file = join(options.dataDir, SQLITE_FILE)
  let connection: SqliteConnection
  try {
    checkWritable(options.dataDir, file)
    connection = await SqliteConnection.open(file)
  } catch (error) {
    const { message } = asError(error)
    const code = codeOf(error)
    const reason = code.startsWith('SQLITE_') ? `${SQLITE_FILE}: ${message} (${code})` : message
    throw new ConfigError(`Refusing to start: DATA_DIR (${options.dataDir}) cannot be used: ${reason}`, {
      cause: error,
    })
  }
  const disk = new DiskState(options.dataDir, options.onWriteFailure)
  const isUnavailable = (error: unknown) =>
    error instanceof StoreUnavailableError || SQLITE_BUSY.has(codeOf(error)) || isDiskFailure(error)
  connection.onResult = (wrote, error) => {
    if (wrote) disk.wrote()
    /* c8 ignore next -- a failing disk needs root: test/services/file-systems.test.ts */
    if (error !== undefined && isDiskFailure(error)) disk.failed(error)
  }
  const db = new Kysely<StoreSchema>({ dialect: mapUnavailable(new SqliteStoreDialect(connection), isUnavailable) })
  return {
    db,
    dialect: 'sqlite',
    isUnavailable,
    isConstraintFailure: (error) => codeOf(error) === 'SQLITE_CONSTRAINT',
    ping: async () => {
      await sql`select 1`.execute(db)
      await disk.check()
    },
    migrationSchema: () => Promise.resolve(undefined),
    close: () => db.destroy(),
  }
}

/** Write access first: SQLite would open the file read-only, and fail later. */
function checkWritable(dataDir: string, file: string): void {
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
}

/** Kysely's SQLite dialect on the store's one {@link SqliteConnection}. */
export class SqliteStoreDialect implements Dialect {
  private readonly connection: SqliteConnection

  constructor(connection: SqliteConnection) {
    this.connection = connection
  }

  createAdapter = () => new SqliteAdapter()
  createDriver = (): Driver => new SqliteStoreDriver(this.connection)
  createIntrospector = (db: Parameters<Dialect['createIntrospector']>[0]) => new SqliteIntrospector(db)
  createQueryCompiler = () => new SqliteQueryCompiler()
}

/** One connection: Kysely lends it to one user at a time (its single-connection mutex), so a transaction is whole. */
class SqliteStoreDriver implements Driver {
  private readonly connection: SqliteConnection

  constructor(connection: SqliteConnection) {
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

/** An error of node-sqlite3's: its message is prefixed with its code (`SQLITE_BUSY: database is locked`). */
function sqliteError(error: Error): Error {
  return Object.assign(new Error(error.message.replace(/^SQLITE_\w+: /, '')), {
    name: 'SqliteError',
    code: codeOf(error),
  })
}

/**
 * A bigint as its decimal text: node-sqlite3 binds a bigint as NULL. SQLite stores such text in an INTEGER column, or
 * compares it with one, as the exact 64-bit integer (sqlite.org/datatype3.html, "Type Affinity").
 */
const bindable = (value: unknown) => (typeof value === 'bigint' ? value.toString() : value)

/** Prepared statements kept: a batch of each size has its own text, as does the read of its replays. */
const STATEMENT_CACHE_SIZE = 256

/** Kysely's node kinds whose statements give rows (a raw query may). */
const ROW_KINDS = new Set(['SelectQueryNode', 'RawNode'])

/**
 * The one connection, with node-sqlite3's serialized mode: statements run in the order they are issued, one at a time,
 * on the thread pool. Kysely lends it to one user at a time, so a batch never joins a transaction. Integers are read
 * as JS numbers (exact up to 2^53): the store reads plants' ids as text.
 */
export class SqliteConnection implements DatabaseConnection {
  private readonly database: sqlite3.Database
  private readonly statements = new Map<string, sqlite3.Statement>()
  private inTransaction = false
  /** Each statement's outcome: `wrote` a change outside a transaction, or its error. */
  onResult: ((wrote: boolean, error?: Error) => void) | undefined

  private constructor(database: sqlite3.Database) {
    this.database = database
  }

  /**
   * Opens `file` (created if missing; its directory must exist) in WAL mode with `synchronous=FULL`: a commit is
   * durable when it resolves (sqlite.org/pragma.html#pragma_synchronous).
   * @throws SQLite's error (`SQLITE_NOTADB`, `SQLITE_CANTOPEN`, …), the file closed again.
   */
  static async open(file: string, busyTimeoutMs = BUSY_TIMEOUT_MS): Promise<SqliteConnection> {
    const database = await new Promise<sqlite3.Database>((resolve, reject) => {
      const opened: sqlite3.Database = new sqlite3.Database(file, (error) =>
        error === null ? resolve(opened) : reject(sqliteError(error)),
      )
    })
    database.serialize()
    database.configure('busyTimeout', busyTimeoutMs)
    const connection = new SqliteConnection(database)
    try {
      await connection.all('pragma journal_mode = WAL', [])
      await connection.all('pragma synchronous = FULL', [])
    } catch (error) {
      await connection.close()
      throw error
    }
    return connection
  }

  /** Kysely's compiled query, its bigints bound as text. @throws SQLite's error, code kept (`SQLITE_BUSY`, …). */
  async executeQuery<R>({ query, sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    const values = parameters.map(bindable)
    if ('returning' in query) {
      const rows = await this.all<R>(sql, values)
      this.wrote(rows.length)
      return { rows }
    }
    if (ROW_KINDS.has(query.kind)) return { rows: await this.all<R>(sql, values) }
    const { changes, lastID } = await this.run(sql, values)
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastID) }
  }

  /** `begin`: later statements join the transaction until {@link SqliteConnection.end}. */
  async begin(): Promise<void> {
    await this.run('begin', [])
    this.inTransaction = true
  }

  /** A failed commit keeps the transaction open for the rollback that follows. */
  async end(statement: 'commit' | 'rollback'): Promise<void> {
    try {
      await this.run(statement, [])
      this.inTransaction = false
    } finally {
      if (statement === 'rollback') this.inTransaction = false
    }
  }

  /** Not supported: Kysely streams only on request, and the service never asks. @throws always. */
  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('The embedded store does not stream queries')
  }

  /** After the statements issued before it; the last connection to close removes the WAL file. */
  async close(): Promise<void> {
    await Promise.all([...this.statements].map(([text, statement]) => this.discard(text, statement)))
    return new Promise((resolve, reject) =>
      this.database.close((error) =>
        /* c8 ignore next -- every statement is finalized first: nothing to fail */
        error === null ? resolve() : reject(sqliteError(error)),
      ),
    )
  }

  /** Reports a statement that changed `count` rows: a write to the disk once outside a transaction. */
  private wrote(count: number): void {
    this.onResult?.(count > 0 && !this.inTransaction)
  }

  /**
   * `text`'s statement, prepared on first use and kept: a batch is then one trip to the thread pool, not three
   * (prepare, step, finalize). `reject` is told if preparing fails: node-sqlite3 then drops the calls queued on it.
   */
  private statement(text: string, reject: (error: Error) => void): sqlite3.Statement {
    let statement = this.statements.get(text)
    if (statement === undefined) {
      statement = this.database.prepare(text, (error) => {
        if (error === null) return
        this.statements.delete(text)
        reject(this.failed(error))
      })
      this.statements.set(text, statement)
      // The first prepared goes first: a Map keeps insertion order.
      for (const [oldest, old] of this.statements) {
        if (this.statements.size <= STATEMENT_CACHE_SIZE) break
        void this.discard(oldest, old)
      }
    }
    return statement
  }

  /**
   * Finalizes `text`'s statement. A statement that failed must be: one stopped by SQLITE_BUSY is still active, and
   * later writes would join its open transaction and never commit (sqlite.org/c3ref/step.html).
   */
  private discard(text: string, statement: sqlite3.Statement): Promise<void> {
    this.statements.delete(text)
    return new Promise((resolve) => statement.finalize(() => resolve()))
  }

  private all<R>(text: string, values: readonly unknown[]): Promise<R[]> {
    return new Promise((resolve, reject) => {
      const statement = this.statement(text, reject)
      statement.all<R>(values, (error, rows) => {
        if (error === null) return resolve(rows)
        void this.discard(text, statement).then(() => reject(this.failed(error)))
      })
    })
  }

  private run(text: string, values: readonly unknown[]): Promise<sqlite3.RunResult> {
    return new Promise((resolve, reject) => {
      const statement = this.statement(text, reject)
      const settle = (error: Error | null, result: sqlite3.RunResult) => {
        if (error !== null) return void this.discard(text, statement).then(() => reject(this.failed(error)))
        this.wrote(result.changes)
        resolve(result)
      }
      // node-sqlite3 gives `changes` and `lastID` as the callback's `this`.
      statement.run(values, function (this: sqlite3.RunResult, error: Error | null) {
        settle(error, this)
      })
    })
  }

  private failed(error: Error): Error {
    const failure = sqliteError(error)
    this.onResult?.(false, failure)
    return failure
  }
}
