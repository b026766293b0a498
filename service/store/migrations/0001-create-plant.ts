/**
 * Migration 0001: table `plant`, the same on SQLite and PostgreSQL.
 * @module
 */
import { type Kysely, sql } from 'kysely'

/** Creates table `plant` (id bigint primary key, name, tag, created_at). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('plant')
    .addColumn('id', 'bigint', (column) => column.primaryKey())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('tag', 'text')
    .addColumn('created_at', 'timestamp', (column) => column.notNull().defaultTo(sql`CURRENT_TIMESTAMP`))
    .execute()
}

/** Drops table `plant`. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('plant').execute()
}
