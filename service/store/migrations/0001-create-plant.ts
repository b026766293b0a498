/** Table `plant`, the same on SQLite and PostgreSQL. @module */
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('plant')
    .addColumn('id', 'bigint', (column) => column.primaryKey())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('tag', 'text')
    .addColumn('created_at', 'timestamp', (column) => column.notNull().defaultTo(sql`CURRENT_TIMESTAMP`))
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('plant').execute()
}
