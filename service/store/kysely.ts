/**
 * Kysely, the store's query builder and migrator, through one module. `npm run build`
 * bundles this module's output with Kysely inside (esbuild), so a start loads one file
 * instead of Kysely's 257 modules (docs/benchmarks.md); ESLint keeps every other
 * module of service/ importing Kysely from here.
 * @module
 */
export { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely'
export type { ColumnType, PostgresPool, PostgresPoolClient, PostgresQueryResult, SqliteDatabase, SqliteStatement } from 'kysely'
export { DEFAULT_MIGRATION_TABLE, Migrator } from 'kysely/migration'
export type { Migration, MigrationResultSet } from 'kysely/migration'
