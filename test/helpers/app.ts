/**
 * Test helpers: build the application for one test (`build(t)`, closed when the test
 * ends) on a store of its own, the test tokens and configuration, PostgreSQL schemas,
 * and a sink for log lines. Checks against the contract are in `contract.ts`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import SQLite from 'better-sqlite3'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import pg from 'pg'
import type { Test } from 'tap'
import { type AppConfig, createApp } from '../../service/app.js'
import { loadConfig } from '../../service/config.js'
import { openStore } from '../../service/store/database.js'
import { migrateToLatest } from '../../service/store/migrate.js'
import { SQLITE_FILE } from '../../service/store/sqlite.js'
import type { StoreOptions } from '../../service/store/store.js'

/** A test's tap object, as much of it as the helpers need. */
export type TestContext = Pick<Test, 'teardown'>

/**
 * `TEST_DATABASE_URL`: when set (`postgres://…`), every app the helpers build stores
 * into PostgreSQL, each in a schema of its own; unset, into the embedded store.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL

/**
 * PostgreSQL for tests that need it whatever store the suite runs on: that of
 * {@link TEST_DATABASE_URL}, else `TEST_POSTGRES_URL` (the server `npm test` starts
 * for its run, see `test/run/run.ts`), else one at 127.0.0.1:5432.
 */
export const POSTGRES_URL = TEST_DATABASE_URL ?? process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** A PostgreSQL schema of one test: a URL that selects it, and a client inside it. */
export interface PostgresSchema {
  /** `postgres://` URL whose connections use the schema (`search_path`). */
  readonly url: string
  /** A connection whose `search_path` is the schema. */
  readonly client: pg.Client
}

/** Creates an empty PostgreSQL schema, dropped (with the client closed) at teardown. */
export async function postgresSchema(t: TestContext): Promise<PostgresSchema> {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  await client.query(`create schema ${schema}; set search_path to ${schema}`)
  t.teardown(async () => {
    await client.query(`drop schema ${schema} cascade`)
    await client.end()
  })
  const url = new URL(POSTGRES_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return { url: url.toString(), client }
}

/**
 * A fresh store for one test: a data directory, and with {@link TEST_DATABASE_URL}
 * an empty PostgreSQL schema. Pass the result to {@link build} to share it between apps.
 */
export async function freshStore(t: TestContext): Promise<Pick<AppConfig, 'dataDir' | 'databaseUrl'>> {
  // A directory of its own (t.testdir() is one per test and is emptied on every call).
  const dataDir = mkdtempSync(join(tmpdir(), 'plant-store-test-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  if (TEST_DATABASE_URL === undefined) return { dataDir, databaseUrl: undefined }
  return { dataDir, databaseUrl: (await postgresSchema(t)).url }
}

/** Drops table `plant` behind a running app's back, through a connection of our own: its next create fails (500). */
export async function dropPlantTable(store: Awaited<ReturnType<typeof freshStore>>): Promise<void> {
  if (store.databaseUrl !== undefined) {
    const client = new pg.Client({ connectionString: store.databaseUrl })
    await client.connect()
    await client.query('drop table plant').finally(() => client.end())
    return
  }
  const db = new SQLite(join(store.dataDir, SQLITE_FILE))
  try {
    db.exec('drop table plant')
  } finally {
    db.close()
  }
}

/** A token valid in every app built by {@link build}. */
export const TOKEN = 'test-token-Zm4qX8vN2pR6tL0wK3sB7cH1jF5gD9y'
/** A second valid token (rotation). */
export const OTHER_TOKEN = 'rotated-token-Pw5eT9yU3iO7aS1dG6hJ0kL4zX8c'

/** Headers of an authenticated JSON request. */
export const JSON_HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } as const

/**
 * Limits that tests other than their own must not meet: many requests from one
 * address and token (rate limits), and the event-loop delay of a busy test machine
 * (load shedding). A test of a limit turns it on in its overrides.
 */
export const LIMITS_OFF = { RATE_LIMIT_MAX: '0', AUTH_FAILURE_LIMIT_MAX: '0', LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '0' } as const

/**
 * The configuration of a test app: `loadConfig`'s defaults (one place for them),
 * both test tokens, {@link LIMITS_OFF}, then `overrides`.
 */
export function testConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  return { ...loadConfig({ NODE_ENV: 'test', PLANT_STORE_TOKENS: `${TOKEN},${OTHER_TOKEN}`, ...LIMITS_OFF }), ...overrides }
}

/** Options to open a store directly in a test: the test defaults, then `overrides`. */
export function storeOptions(overrides: Partial<StoreOptions> = {}): StoreOptions {
  return { ...testConfig(), onConnectionError: ignoreConnectionError, ...overrides }
}

/**
 * Builds the application on a fresh store (see {@link freshStore}), closed when the
 * test ends.
 * @param overrides - configuration to change; `dataDir`/`databaseUrl` (e.g. from
 *   {@link freshStore}) reuse a store, to restart on the same data.
 * @param logger - Fastify logger option; silent by default.
 */
export async function build(t: TestContext, overrides: Partial<AppConfig> = {}, logger: FastifyServerOptions['logger'] = false): Promise<FastifyInstance> {
  const store = overrides.dataDir === undefined && overrides.databaseUrl === undefined ? await freshStore(t) : {}
  const app = await createApp(testConfig({ ...store, ...overrides }), logger)
  t.teardown(() => app.close())
  return app
}

/**
 * Builds the application on the PostgreSQL of `overrides.databaseUrl`, migrated
 * beforehand with the default timeouts, so that a test's own deadlines never apply to
 * start-up: with `MIGRATE_ON_START` false it opens no connection before its first
 * request. Closed when the test ends.
 */
export async function migratedApp(t: TestContext, overrides: Partial<AppConfig> & { databaseUrl: string }): Promise<FastifyInstance> {
  const { dataDir } = await freshStore(t)
  const store = openStore(storeOptions({ dataDir, databaseUrl: overrides.databaseUrl }))
  await migrateToLatest(store).finally(() => store.close())
  return build(t, { dataDir, ...overrides, migrateOnStart: false })
}

/**
 * Builds the application and listens on a free loopback port, for tests over a
 * real socket.
 * @returns the app and its base URL, e.g. `http://127.0.0.1:41234`.
 */
export async function listen(t: TestContext, overrides: Partial<AppConfig> = {}): Promise<{ app: FastifyInstance; url: string }> {
  const app = await build(t, overrides)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url }
}

/** `onConnectionError` for stores opened directly in tests: a dropped idle connection is not a failure there. */
export function ignoreConnectionError(): void {}

/** Log lines a logger wrote, parsed: `stream` is its destination (pino JSON lines). */
export interface LogSink {
  readonly stream: Writable
  /** Every line written so far, parsed, in order. */
  readonly lines: Array<Record<string, unknown>>
}

/** A pino destination that keeps every log line, parsed. */
export function logSink(): LogSink {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { stream, lines }
}
