/** Table `plant`, the same on SQLite and PostgreSQL. @module */
import { type Kysely, sql } from 'kysely'

/** Creates `plant`: the id the primary key, `created_at` set by the database. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('plant')
    .addColumn('id', 'bigint', (column) => column.primaryKey())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('tag', 'text')
    .addColumn('created_at', 'timestamp', (column) => column.notNull().defaultTo(sql`CURRENT_TIMESTAMP`))
    .execute()
}

/** Drops `plant` and every plant in it. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('plant').execute()
}
