/**
 * What each database (`sqlite.ts`, `postgres.ts`) provides under the repository, and the wrapper that turns a
 * dialect's "unavailable" errors into {@link StoreUnavailableError}.
 * @module
 */
import {
  type Compilable,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type InsertQueryBuilder,
  type InsertResult,
  type Kysely,
  sql,
} from 'kysely'
import type { Config } from '../config.ts'
import type { StoreSchema } from './schema.ts'

/** `databaseUrl` is a secret, never logged. */
export interface StoreOptions extends Pick<
  Config,
  'dataDir' | 'databaseUrl' | 'databasePoolSize' | 'databaseStatementTimeoutMs' | 'databaseConnectTimeoutMs'
> {
  readonly onConnectionError: (error: Error) => void
  /** Told once per failure, until a write succeeds. */
  readonly onWriteFailure?: ((error: Error) => void) | undefined
}

/**
 * The store did not confirm the write; a retry later may succeed. On PostgreSQL a write cut off by a timeout or a
 * lost connection may have committed all the same, so the retry must be idempotent (an idempotent replay).
 * Any query through {@link Store.db} fails with it when the store is unavailable.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError'
}

/** A plant as stored; `tag` is `null` when the create had none. */
export interface PlantRecord {
  readonly id: bigint
  readonly name: string
  readonly tag: string | null
}

/** A database opened for the repository (`openSqlite`, `openPostgres`). */
export interface Store {
  /** Its queries reject with {@link StoreUnavailableError} when `isUnavailable` says so of their error. */
  readonly db: Kysely<StoreSchema>
  readonly dialect: 'sqlite' | 'postgres'
  /** A retry may succeed: {@link StoreUnavailableError}, or a database error that {@link Store.db} turns into one. */
  isUnavailable(error: unknown): boolean
  /**
   * Present where a failed statement is undone whole and cheaply (SQLite): {@link insertNew} then first inserts a
   * batch as it is, and a failure this accepts (a stored id, or another constraint) sends it the second way.
   */
  readonly isConstraintFailure?: (error: unknown) => boolean
  /** Rejects while the embedded store's disk cannot take a write. */
  ping(): Promise<void>
  /** So schemas of one PostgreSQL database migrate apart. */
  migrationSchema(): Promise<string | undefined>
  close(): Promise<void>
}

/** A plant's id as its decimal text: SQLite would read it as a JS number, exact only up to 2^53. */
const idText = sql<string>`cast(id as text)`.as('id')

/** Compiled queries of one kind, per database, by the batch's size. */
type KeptQueries<R> = WeakMap<Kysely<StoreSchema>, Map<number, CompiledQuery<R>>>

/**
 * The inserts compiled so far, by kind: their text depends on the batch's size alone, and Kysely's building and
 * compiling one anew is work per plant (a node per value). Kysely's recipe "Splitting query building and execution".
 */
const plainInserts: KeptQueries<InsertResult> = new WeakMap()
const insertsSkippingStored: KeptQueries<{ id: string }> = new WeakMap()

/**
 * Sizes kept per database and kind, the last used: a steady load's sizes, not every size a burst made
 * (docs/benchmarks.md).
 */
export const COMPILED_INSERTS_KEPT = 64

/** `db`'s query of `size` in `queries`, compiled by `build` on first use; the least recently used past the limit go. */
function kept<R>(queries: KeptQueries<R>, db: Kysely<StoreSchema>, size: number, build: () => CompiledQuery<R>) {
  let bySize = queries.get(db)
  if (bySize === undefined) queries.set(db, (bySize = new Map()))
  const compiled = bySize.get(size) ?? build()
  // Last used last: a Map keeps insertion order, so the first is the least recently used.
  bySize.delete(size)
  bySize.set(size, compiled)
  for (const oldest of bySize.keys()) {
    if (bySize.size <= COMPILED_INSERTS_KEPT) break
    bySize.delete(oldest)
  }
  return compiled
}

/** The insert of `plants`, as `build` gives it for their number, bound row after row, column after column. */
function insertOf<R>(
  db: Kysely<StoreSchema>,
  plants: readonly PlantRecord[],
  queries: KeptQueries<R>,
  build: (insert: InsertQueryBuilder<StoreSchema, 'plant', InsertResult>) => Compilable<R>,
): CompiledQuery<R> {
  const row = { id: 0n, name: '', tag: '' }
  const compiled = kept(queries, db, plants.length, () =>
    build(db.insertInto('plant').values(plants.map(() => row))).compile(),
  )
  return { ...compiled, parameters: plants.flatMap(({ id, name, tag }) => [id, name, tag]) }
}

/**
 * Stores each of `plants` (distinct ids, in ascending order: one lock order) whose id is not stored yet, in one
 * atomic write, durable when it resolves, on either database.
 *
 * On SQLite the batch is first inserted as it is: when every id is new, as creates mostly are, that statement is all
 * it takes, and it returns no rows. A stored id fails it whole, SQLite undoing what it had inserted
 * (sqlite.org/lang_conflict.html, ABORT), and the batch goes the second way: `INSERT … ON CONFLICT DO NOTHING
 * RETURNING` the ids it inserted. PostgreSQL goes only that way: a failed insert there leaves the rows it had written
 * as dead tuples, and writes an error to its log for each retried create.
 * @returns the rows already stored under the others' ids, read back without a transaction (a row never changes).
 * @throws {StoreUnavailableError} when unreachable or overloaded; else the write's own error, nothing stored.
 */
export async function insertNew(
  { db, isConstraintFailure }: Pick<Store, 'db' | 'isConstraintFailure'>,
  plants: readonly PlantRecord[],
): Promise<ReadonlyMap<bigint, PlantRecord>> {
  if (isConstraintFailure !== undefined) {
    try {
      await db.executeQuery(insertOf(db, plants, plainInserts, (insert) => insert))
      return new Map()
    } catch (error) {
      // Any other constraint fails the second way too.
      if (!isConstraintFailure(error)) throw error
    }
  }
  const { rows: inserted } = await db.executeQuery(
    insertOf(db, plants, insertsSkippingStored, (insert) =>
      insert.onConflict((conflict) => conflict.column('id').doNothing()).returning(idText),
    ),
  )
  const insertedIds = new Set(inserted.map((row) => BigInt(row.id)))
  const others = plants.filter((plant) => !insertedIds.has(plant.id)).map((plant) => plant.id)
  const rows =
    others.length === 0
      ? []
      : await db.selectFrom('plant').select([idText, 'name', 'tag']).where('id', 'in', others).execute()
  return new Map(rows.map((row) => [BigInt(row.id), { id: BigInt(row.id), name: row.name, tag: row.tag }]))
}

/** `error` as {@link StoreUnavailableError} naming its cause when `isUnavailable` accepts it, else as it is. */
export function unavailableAs(error: unknown, isUnavailable: (error: unknown) => boolean): unknown {
  if (error instanceof StoreUnavailableError || !(error instanceof Error) || !isUnavailable(error)) return error
  return new StoreUnavailableError(`The store is unavailable (${error.message})`, { cause: error })
}

/** `dialect`, where failures `isUnavailable` accepts reject with {@link StoreUnavailableError}, naming the cause. */
export function mapUnavailable(dialect: Dialect, isUnavailable: (error: unknown) => boolean): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver: () => mappingDriver(dialect.createDriver(), isUnavailable),
  }
}

function mappingDriver(driver: Driver, isUnavailable: (error: unknown) => boolean): Driver {
  const mapped = <T>(work: () => Promise<T>): Promise<T> =>
    work().catch((error: unknown) => Promise.reject(unavailableAs(error, isUnavailable)))
  // The driver is given back its own connections.
  const inner = new WeakMap<DatabaseConnection, DatabaseConnection>()
  const outer = new WeakMap<DatabaseConnection, DatabaseConnection>()
  const wrap = (connection: DatabaseConnection): DatabaseConnection => {
    let wrapped = outer.get(connection)
    if (wrapped === undefined) {
      wrapped = {
        executeQuery: (query, options) => mapped(() => connection.executeQuery(query, options)),
        streamQuery: (query, chunkSize, options) => connection.streamQuery(query, chunkSize, options),
      }
      outer.set(connection, wrapped)
      inner.set(wrapped, connection)
    }
    return wrapped
  }
  /* c8 ignore next -- Kysely hands back only the connections `wrap` made */
  const own = (connection: DatabaseConnection) => inner.get(connection) ?? connection
  return {
    init: (options) => mapped(() => driver.init(options)),
    acquireConnection: async (options) => wrap(await mapped(() => driver.acquireConnection(options))),
    beginTransaction: (connection, settings) => mapped(() => driver.beginTransaction(own(connection), settings)),
    commitTransaction: (connection) => mapped(() => driver.commitTransaction(own(connection))),
    rollbackTransaction: (connection) => mapped(() => driver.rollbackTransaction(own(connection))),
    releaseConnection: (connection, options) => driver.releaseConnection(own(connection), options),
    destroy: (options) => driver.destroy(options),
  }
}
