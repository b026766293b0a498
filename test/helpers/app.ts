/**
 * The app for one test (`build(t)`, closed at its end) on a store of its own; test tokens, configuration, PostgreSQL
 * schemas, a log sink.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { Kysely, sql } from 'kysely'
import pg from 'pg'
import tap, { type Test } from 'tap'
import { type AppConfig, createApp } from '../../service/app.ts'
import { loadConfig } from '../../service/config.ts'
import { loggerOptions } from '../../service/logging.ts'
import { openStore } from '../../service/store/database.ts'
import { migrateToLatest } from '../../service/store/migrate.ts'
import { SQLITE_FILE, SqliteConnection, SqliteStoreDialect } from '../../service/store/sqlite.ts'
import type { StoreOptions } from '../../service/store/store.ts'

/** What the helpers need of a test's tap object. */
export type TestContext = Pick<Test, 'teardown'>

/** `TEST_DATABASE_URL`: every app built stores there, in a schema of its own. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL

/** {@link TEST_DATABASE_URL}, else `TEST_POSTGRES_URL`, else 127.0.0.1. */
export const POSTGRES_URL =
  TEST_DATABASE_URL ?? process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** Runs `statement` on a connection of its own to `url`. @returns its rows. */
export async function query<Row extends pg.QueryResultRow>(url: string, statement: string, values?: unknown[]) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return (await client.query<Row>(statement, values).finally(() => client.end())).rows
}

/** Creates an empty database on {@link POSTGRES_URL}, dropped at teardown. @returns its URL. */
export async function postgresDatabase(t: TestContext) {
  const name = `test_${randomBytes(6).toString('hex')}`
  await query(POSTGRES_URL, `create database ${name}`)
  t.teardown(() => query(POSTGRES_URL, `drop database ${name} with (force)`))
  return Object.assign(new URL(POSTGRES_URL), { pathname: `/${name}` }).toString()
}

/** This process's own database: Kysely's migrator fails on a schema another process drops meanwhile. */
let processDatabase: Promise<string> | undefined

/** An empty schema, dropped at teardown: a URL whose connections use it, and a client inside it. */
export async function postgresSchema(t: TestContext) {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const database = await (processDatabase ??= postgresDatabase(tap))
  const client = new pg.Client({ connectionString: database })
  await client.connect()
  await client.query(`create schema ${schema}; set search_path to ${schema}`)
  t.teardown(async () => {
    await client.query(`drop schema ${schema} cascade`)
    await client.end()
  })
  const url = new URL(database)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return { url: url.toString(), client }
}

/** A fresh store (a data directory; with {@link TEST_DATABASE_URL} a schema), removed at teardown. */
export async function freshStore(t: TestContext): Promise<Pick<AppConfig, 'dataDir' | 'databaseUrl'>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'plant-store-test-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  if (TEST_DATABASE_URL === undefined) return { dataDir, databaseUrl: undefined }
  return { dataDir, databaseUrl: (await postgresSchema(t)).url }
}

/** Drops table `plant` behind a running app's back: its next create fails (500). */
export async function dropPlantTable(store: Awaited<ReturnType<typeof freshStore>>) {
  if (store.databaseUrl !== undefined) return query(store.databaseUrl, 'drop table plant')
  const db = await sqliteFile(join(store.dataDir, SQLITE_FILE))
  await sql`drop table plant`.execute(db).finally(() => db.destroy())
}

/** A connection to a store's `file` on the service's own SQLite, whose locks it sees; integers read as numbers. */
export async function sqliteFile(file: string): Promise<Kysely<Record<string, never>>> {
  return new Kysely({ dialect: new SqliteStoreDialect(await SqliteConnection.open(file)) })
}

/** A token valid in every app built by {@link build}. */
export const TOKEN = 'test-token-Zm4qX8vN2pR6tL0wK3sB7cH1jF5gD9y'
/** A second valid token (rotation). */
export const OTHER_TOKEN = 'rotated-token-Pw5eT9yU3iO7aS1dG6hJ0kL4zX8c'

/** Headers of an authenticated JSON request. */
export const JSON_HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } as const

/** Limits off: a test of a limit turns it on. */
export const LIMITS_OFF = {
  RATE_LIMIT_MAX: '0',
  AUTH_FAILURE_LIMIT_MAX: '0',
  LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '0',
} as const

/** `loadConfig`'s defaults, both test tokens, {@link LIMITS_OFF}, then `overrides`. */
export function testConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  return {
    ...loadConfig({ NODE_ENV: 'test', PLANT_STORE_TOKENS: `${TOKEN},${OTHER_TOKEN}`, ...LIMITS_OFF }),
    ...overrides,
  }
}

/** Store options: the test defaults (a dropped idle connection is no failure), then `overrides`. */
export function storeOptions(overrides: Partial<StoreOptions> = {}): StoreOptions {
  return { ...testConfig(), onConnectionError: () => {}, ...overrides }
}

/** Builds the app, closed at teardown, on a fresh store unless `overrides` names one; silent unless `logger`. */
export async function build(
  t: TestContext,
  overrides: Partial<AppConfig> = {},
  logger: FastifyServerOptions['logger'] = false,
): Promise<FastifyInstance> {
  const store = overrides.dataDir === undefined && overrides.databaseUrl === undefined ? await freshStore(t) : {}
  const app = await createApp(testConfig({ ...store, ...overrides }), logger)
  t.teardown(() => app.close())
  return app
}

/** {@link build} on `overrides.databaseUrl`, migrated beforehand with the default timeouts. */
export async function migratedApp(
  t: TestContext,
  overrides: Partial<AppConfig> & { databaseUrl: string },
): Promise<FastifyInstance> {
  const { dataDir } = await freshStore(t)
  const store = await openStore(storeOptions({ dataDir, databaseUrl: overrides.databaseUrl }))
  await migrateToLatest(store).finally(() => store.close())
  return build(t, { dataDir, ...overrides, migrateOnStart: false })
}

/** {@link build}, listening on a free loopback port. @returns the app and its base URL. */
export async function listen(
  t: TestContext,
  overrides: Partial<AppConfig> = {},
  logger: FastifyServerOptions['logger'] = false,
) {
  const app = await build(t, overrides, logger)
  return { app, url: await app.listen({ host: '127.0.0.1', port: 0 }) }
}

/** A pino destination (`stream`) keeping each log line parsed (`lines`); `logger`: the service's options on it. */
export function logSink() {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as (typeof lines)[number])
      done()
    },
  })
  return { stream, lines, logger: { ...loggerOptions('info', false), stream } }
}
