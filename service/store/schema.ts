/** Kysely's types of the tables the migrations create. @module */
import type { ColumnType } from 'kysely'

interface PlantTable {
  /**
   * Read: SQLite gives a number (exact up to 2^53; the store reads plants' ids as text), PostgreSQL a decimal string.
   * Written and compared as a bigint.
   */
  id: ColumnType<number | string | bigint, bigint, never>
  name: ColumnType<string, string, never>
  tag: ColumnType<string | null, string | null, never>
  created_at: ColumnType<Date | string, never, never>
}

/** Kysely's `Database` type: each table by name. */
export interface StoreSchema {
  plant: PlantTable
}
