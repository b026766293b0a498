/** The embedded SQLite store; a failing disk is 503 until it writes again (docs/operations.md, "Full disk (embedded store)"). @module */
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, SqliteDialect, type SqliteDatabase, type SqliteStatement, sql } from 'kysely'
import { ConfigError } from '../config.ts'
import type { StoreSchema } from './schema.ts'
import type { Store, StoreOptions } from './store.ts'
export const SQLITE_FILE = 'plants.sqlite3'

/** Room for a few commits. */
const PROBE_BYTES = 64 * 1024

export const PROBE_FILE = '.plant-store-probe'

/** Its directory must exist; every INTEGER is read as an exact bigint. */
export function openSqliteFile(file: string): SQLite.Database {
  const database = new SQLite(file, { timeout: 5000 })
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.defaultSafeIntegers(true)
  return database
}

const SQLITE_BUSY = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED'])

/** The disk failed, not the service: a retry may succeed. */
function isDiskFailure(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR'))
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

/** @throws {ConfigError} naming `DATA_DIR` and the reason when this process cannot use it. */
export function openSqlite(options: StoreOptions): Store {
  const file = join(options.dataDir, SQLITE_FILE)
  const database = openUsableSqliteFile(options.dataDir, file)
  const disk = new DiskState(options.dataDir, options.onWriteFailure)
  const db = new Kysely<StoreSchema>({ dialect: new SqliteDialect({ database: watchingWrites(database, disk) }) })
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

/** Checks write access first: SQLite would open the file read-only, and fail later. */
function openUsableSqliteFile(dataDir: string, file: string): SQLite.Database {
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
    return openSqliteFile(file)
  } catch (error) {
    const { message, code } = error as NodeJS.ErrnoException
    const reason = code?.startsWith('SQLITE_') ? `${SQLITE_FILE}: ${message} (${code})` : message
    throw new ConfigError(`Refusing to start: DATA_DIR (${dataDir}) cannot be used: ${reason}`, { cause: error })
  }
}

/**
 * Each statement text prepared once, as better-sqlite3 intends (Kysely asks for every query).
 * Bounded: the texts are a few per batch size, up to `GROUP_COMMIT_MAX_BATCH`.
 */
function watchingWrites(database: SQLite.Database, disk: DiskState): SqliteDatabase {
  const prepared = new Map<string, SqliteStatement>()
  return {
    close: () => database.close(),
    prepare: (source: string) => {
      let statement = prepared.get(source)
      if (statement === undefined) {
        const fresh = database.prepare(source)
        statement = fresh.readonly ? (fresh as unknown as SqliteStatement) : watchedWrite(fresh, database, disk)
        prepared.set(source, statement)
      }
      return statement
    },
  }
}

/** Tells `disk` of a failure, or of a change committed outside a transaction; a replay changes nothing and tells nothing. */
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
