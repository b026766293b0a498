/** Kysely's types of the tables the migrations create. @module */
import type { ColumnType } from 'kysely'

interface PlantTable {
  /** SQLite returns bigint, PostgreSQL a decimal string. */
  id: ColumnType<bigint | string, bigint, never>
  name: ColumnType<string, string, never>
  tag: ColumnType<string | null, string | null, never>
  created_at: ColumnType<Date | string, never, never>
}

export interface StoreSchema {
  plant: PlantTable
}
