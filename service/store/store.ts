/**
 * What each database (`sqlite.ts`, `postgres.ts`) provides under the repository, and the wrapper that turns a
 * dialect's "unavailable" errors into {@link StoreUnavailableError}.
 * @module
 */
import { type CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type Kysely, sql } from 'kysely'
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
 * Nothing was stored; a retry later may succeed.
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
  /** Rejects while the embedded store's disk cannot take a write. */
  ping(): Promise<void>
  /** So schemas of one PostgreSQL database migrate apart. */
  migrationSchema(): Promise<string | undefined>
  close(): Promise<void>
}

/** A plant's id as its decimal text: SQLite would read it as a JS number, exact only up to 2^53. */
const idText = sql<string>`cast(id as text)`.as('id')

/**
 * Each database's compiled insert, by the batch's size: its text depends on the size alone, and Kysely's building and
 * compiling it anew is work per plant (a node per value). Kysely's recipe "Splitting query building and execution".
 */
const compiledInserts = new WeakMap<Kysely<StoreSchema>, Map<number, CompiledQuery<{ id: string }>>>()

/** Sizes kept per database, the last used: a steady load's sizes, not every size a burst made (docs/benchmarks.md). */
export const COMPILED_INSERTS_KEPT = 64

/** The insert of `plants`: the kept text of its size, bound row after row, column after column, as `values` binds. */
function compiledInsert(db: Kysely<StoreSchema>, plants: readonly PlantRecord[]): CompiledQuery<{ id: string }> {
  let bySize = compiledInserts.get(db)
  if (bySize === undefined) compiledInserts.set(db, (bySize = new Map()))
  let compiled = bySize.get(plants.length)
  if (compiled === undefined) {
    const row = { id: 0n, name: '', tag: '' }
    compiled = db
      .insertInto('plant')
      .values(plants.map(() => row))
      .onConflict((conflict) => conflict.column('id').doNothing())
      .returning(idText)
      .compile()
  }
  // Last used last: a Map keeps insertion order, so the first is the least recently used.
  bySize.delete(plants.length)
  bySize.set(plants.length, compiled)
  for (const oldest of bySize.keys()) {
    if (bySize.size <= COMPILED_INSERTS_KEPT) break
    bySize.delete(oldest)
  }
  return { ...compiled, parameters: plants.flatMap(({ id, name, tag }) => [id, name, tag]) }
}

/**
 * Stores each of `plants` (distinct ids, in ascending order: one lock order) whose id is not stored yet, in one
 * atomic write (`INSERT … ON CONFLICT DO NOTHING RETURNING`), durable when it resolves, on either database.
 * @returns the rows already stored under the others' ids, read back without a transaction (a row never changes).
 * @throws {StoreUnavailableError} when unreachable or overloaded; else the write's own error, nothing stored.
 */
export async function insertNew(
  db: Kysely<StoreSchema>,
  plants: readonly PlantRecord[],
): Promise<ReadonlyMap<bigint, PlantRecord>> {
  const { rows: inserted } = await db.executeQuery(compiledInsert(db, plants))
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
