/**
 * Turns a dialect's "unavailable" errors into {@link StoreUnavailableError} for every query, transaction and
 * connection.
 * @module
 */
import type { DatabaseConnection, Dialect, Driver } from 'kysely'
import { StoreUnavailableError } from './store.ts'

/** `dialect`, where failures `isUnavailable` accepts reject with {@link StoreUnavailableError}, naming the cause. */
export function unavailableAs(dialect: Dialect, isUnavailable: (error: unknown) => boolean): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver: () => mappingDriver(dialect.createDriver(), isUnavailable),
  }
}

function mappingDriver(driver: Driver, isUnavailable: (error: unknown) => boolean): Driver {
  const mapped = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work()
    } catch (error) {
      if (error instanceof StoreUnavailableError || !isUnavailable(error)) throw error
      throw new StoreUnavailableError(`The store is unavailable (${(error as Error).message})`, { cause: error })
    }
  }
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
  const own = (connection: DatabaseConnection) => inner.get(connection)!
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
