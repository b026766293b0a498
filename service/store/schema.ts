/**
 * Table types of the store, for Kysely. They describe the database, which the
 * migrations in `./migrations` create; the HTTP shapes come from openapi.yaml.
 *
 * @module
 */
import type { ColumnType } from 'kysely'

/** Table `plant`: one row per stored plant; rows are never changed. */
interface PlantTable {
  /** Client-supplied signed 64-bit id (primary key). SQLite returns bigint, PostgreSQL a decimal string. */
  id: ColumnType<bigint | string, bigint, never>
  name: ColumnType<string, string, never>
  /** `null` when the NewPlant had no tag. */
  tag: ColumnType<string | null, string | null, never>
  /** When the row was committed (database clock). */
  created_at: ColumnType<Date | string, never, never>
}

/** The store's tables. */
export interface StoreSchema {
  plant: PlantTable
}
