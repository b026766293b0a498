/**
 * The embedded SQLite store, its connection on a worker thread (`sqlite-worker.ts`): the event loop never waits on
 * SQLite's lock or its fsync. A failing disk is 503 until it writes again (docs/operations.md, "Full disk (embedded
 * store)").
 *
 * @module
 */
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { Kysely, sql } from 'kysely'
import { ConfigError } from '../config.ts'
import type { StoreSchema } from './schema.ts'
import { openSqliteFile, type WorkerData } from './sqlite-file.ts'
import { SqliteWorkerDialect } from './sqlite-worker-dialect.ts'
import { type Store, type StoreOptions, StoreUnavailableError } from './store.ts'
import { unavailableAs } from './unavailable.ts'
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
  const code = (error as { code?: unknown } | undefined)?.code
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

/** @throws {ConfigError} naming `DATA_DIR` and why, when this process cannot use it (before the worker starts). */
export function openSqlite(options: StoreOptions): Store {
  const file = join(options.dataDir, SQLITE_FILE)
  checkUsable(options.dataDir, file)
  const disk = new DiskState(options.dataDir, options.onWriteFailure)
  const isUnavailable = (error: unknown) =>
    error instanceof StoreUnavailableError ||
    SQLITE_BUSY.has((error as { code?: string }).code ?? '') ||
    isDiskFailure(error)
  const dialect = new SqliteWorkerDialect({
    startWorker: () => startSqliteWorker(file),
    onResult: (wrote, error) => {
      if (wrote) disk.wrote()
      /* c8 ignore next -- a failing disk needs root: test/services/file-systems.test.ts */
      if (isDiskFailure(error)) disk.failed(error!)
    },
    onWorkerGone: options.onConnectionError,
  })
  const db = new Kysely<StoreSchema>({ dialect: unavailableAs(dialect, isUnavailable) })
  return {
    db,
    dialect: 'sqlite',
    isUnavailable,
    ping: async () => {
      await sql`select 1`.execute(db)
      await disk.check()
    },
    migrationSchema: () => Promise.resolve(undefined),
    close: () => db.destroy(),
  }
}

/** A worker owning a connection to `file`, which must be usable; see {@link SqliteWorkerDialect}. */
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
    const { message, code } = error as NodeJS.ErrnoException
    const reason = code?.startsWith('SQLITE_') ? `${SQLITE_FILE}: ${message} (${code})` : message
    throw new ConfigError(`Refusing to start: DATA_DIR (${dataDir}) cannot be used: ${reason}`, { cause: error })
  }
}
