/**
 * The embedded store: SQLite through better-sqlite3, in `<dataDir>/plants.sqlite3`,
 * WAL journal with `synchronous=FULL`, so a commit is on disk (fsync) before it
 * returns; SQLite's file locks keep a second process on the same file correct. A data
 * directory this process cannot write stops the start; a disk that fills up or fails
 * later makes creates 503 and readiness 503 until it writes again.
 *
 * @module
 */
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, SqliteDialect, type SqliteDatabase, type SqliteStatement, sql } from 'kysely'
import { ConfigError } from '../config.js'
import type { StoreSchema } from './schema.js'
import type { Store, StoreOptions } from './store.js'
/** File name of the embedded store inside the data directory. */
export const SQLITE_FILE = 'plants.sqlite3'

/** Bytes the readiness probe writes (and fsyncs, and removes) into a data directory whose disk failed: room for a few commits. */
const PROBE_BYTES = 64 * 1024

/** The readiness probe's file in the data directory; it exists only while a probe runs. */
export const PROBE_FILE = '.plant-store-probe'

/**
 * Opens the embedded store's file as the store uses it: WAL journal with
 * `synchronous=FULL` (a commit is fsynced before it returns), a 5 s wait for another
 * process's lock, and every INTEGER read as an exact bigint (ids are signed 64-bit).
 *
 * @param file - path of the database file; its directory must exist.
 * @throws SQLite's error when the file cannot be opened.
 */
export function openSqliteFile(file: string): SQLite.Database {
  const database = new SQLite(file, { timeout: 5000 })
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.defaultSafeIntegers(true)
  return database
}

/** SQLite result codes that mean "another connection holds the lock; try later". */
const SQLITE_BUSY = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED'])

/**
 * Whether a SQLite error is a failure of the disk under the store: `SQLITE_FULL`
 * (SQLite's answer to ENOSPC and EDQUOT when it writes) and every `SQLITE_IOERR`
 * (a short or failed write, fsync, truncate, or growing the WAL index, as a full or
 * failing disk causes). Not a fault of the service or of the request; a retry once
 * the disk has room again may succeed.
 */
function isDiskFailure(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR'))
}

/**
 * Whether the data directory's disk takes writes, as the store last saw it: failing
 * from a write that failed for the disk until a write succeeds or a probe does.
 */
class DiskState {
  private failure: Error | undefined

  constructor(
    private readonly dataDir: string,
    private readonly onWriteFailure: ((error: Error) => void) | undefined,
  ) {}

  wrote(): void {
    this.failure = undefined
  }

  // A disk that fails takes a full or failing file system, which only root can
  // mount: test/services/file-systems.test.ts, outside the coverage measurement.
  /* c8 ignore start */
  failed(error: Error): void {
    if (this.failure === undefined) this.onWriteFailure?.(error)
    this.failure = error
  }
  /* c8 ignore stop */

  /**
   * Resolves when the disk takes writes: at once while no write has failed, else
   * after writing {@link PROBE_BYTES} into the data directory, with fsync, and
   * removing them. @throws the probe's error (ENOSPC, EIO, …) while it cannot.
   */
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
 * Opens the embedded store in its data directory, created when missing.
 * @throws {ConfigError} naming `DATA_DIR` and the reason when this process cannot use it.
 */
export function openSqlite(options: StoreOptions): Store {
  const file = join(options.dataDir, SQLITE_FILE)
  const database = openUsableSqliteFile(options.dataDir, file)
  const disk = new DiskState(options.dataDir, options.onWriteFailure)
  const db = new Kysely<StoreSchema>({ dialect: new SqliteDialect({ database: withStatementCache(database, disk) }) })
  return {
    db,
    dialect: 'sqlite',
    isUnavailable: (error) => SQLITE_BUSY.has((error as { code?: string }).code ?? '') || isDiskFailure(error),
    ping: async () => {
      await sql`select 1`.execute(db)
      await disk.check()
    },
    migrationSchema: () => Promise.resolve(undefined),
    close: () => db.destroy(),
  }
}

/**
 * Creates the data directory when missing and opens the store's file in it, after
 * checking that this process may write both and the files SQLite keeps beside it
 * (`access(2)`: it answers for this process's user, and EROFS on a read-only file
 * system). SQLite alone would open a file it cannot write read-only, and fail later.
 *
 * @throws {ConfigError} naming `DATA_DIR` and the reason.
 */
function openUsableSqliteFile(dataDir: string, file: string): SQLite.Database {
  try {
    try {
      mkdirSync(dataDir, { recursive: true })
    } catch {
      // Node's recursive mkdir reports ENOENT for any failure of its last step; a
      // plain one tells the reason (EROFS, EACCES), or succeeds after a race.
      mkdirSync(dataDir)
    }
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK)
    for (const path of [file, `${file}-wal`, `${file}-shm`]) {
      if (existsSync(path)) accessSync(path, constants.R_OK | constants.W_OK)
    }
    return openSqliteFile(file)
  } catch (error) {
    // Node's messages name the errno and the path; SQLite's name neither.
    const { message, code } = error as NodeJS.ErrnoException
    const reason = code?.startsWith('SQLITE_') ? `${SQLITE_FILE}: ${message} (${code})` : message
    throw new ConfigError(`Refusing to start: DATA_DIR (${dataDir}) cannot be used: ${reason}`, { cause: error })
  }
}

/** Most prepared statements kept per connection (a batch of N plants is one statement text per N). */
const STATEMENT_CACHE_SIZE = 256

/**
 * The database as Kysely's SQLite driver sees it (`prepare`, `close`), with each
 * statement text prepared once: Kysely prepares every query it runs again, which
 * showed as a tenth of the store's time in the profile (docs/benchmarks.md).
 * Statements that write tell `disk` how their write went.
 */
function withStatementCache(database: SQLite.Database, disk: DiskState): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>()
  return {
    close: () => database.close(),
    prepare: (source: string) => {
      let statement = statements.get(source)
      if (statement === undefined) {
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear()
        const prepared = database.prepare(source)
        statement = prepared.readonly ? (prepared as unknown as SqliteStatement) : watchedWrite(prepared, database, disk)
        statements.set(source, statement)
      }
      return statement
    },
  }
}

/**
 * A statement that writes, as Kysely runs it (`all` when it returns rows, else
 * `run`): a failure of the disk is told to `disk`, and so is a change committed
 * (outside a transaction, the statement's own commit). A statement that changed
 * nothing (an idempotent replay) wrote nothing, and tells nothing.
 */
function watchedWrite(statement: SQLite.Statement, database: SQLite.Database, disk: DiskState): SqliteStatement {
  const watch = <T extends unknown[] | SQLite.RunResult>(execute: () => T): T => {
    try {
      const result = execute()
      const changed = Array.isArray(result) ? result.length > 0 : result.changes > 0
      if (changed && !database.inTransaction) disk.wrote()
      return result
    } catch (error) {
      /* c8 ignore next -- a failing disk needs root: test/services/file-systems.test.ts */
      if (isDiskFailure(error)) disk.failed(error as Error)
      throw error
    }
  }
  return {
    reader: statement.reader,
    all: (parameters) => watch(() => statement.all(parameters)),
    run: (parameters) => watch(() => statement.run(parameters)),
    iterate: statement.iterate.bind(statement),
  }
}
