/**
 * Kysely's types of the tables the migrations create (the HTTP shapes are openapi.yaml's).
 * @module
 */
import type { ColumnType } from 'kysely'

/** Table `plant`: one row per stored plant; rows are never changed. */
interface PlantTable {
  /** Client-supplied signed 64-bit id (primary key). SQLite returns bigint, PostgreSQL a decimal string. */
  id: ColumnType<bigint | string, bigint, never>
  name: ColumnType<string, string, never>
  tag: ColumnType<string | null, string | null, never>
  /** When the row was committed (database clock). */
  created_at: ColumnType<Date | string, never, never>
}

export interface StoreSchema {
  plant: PlantTable
}
