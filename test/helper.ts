/**
 * Test helpers: build the application for one test, and check responses against
 * the schemas openapi.yaml declares for their status.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import type { Test } from 'tap'
import { type AppConfig, createApp } from '../service/app.js'
import { loadContract } from '../service/contract.js'

/** A test's tap object, as much of it as the helpers need. */
export type TestContext = Pick<Test, 'testdir' | 'teardown'>

/**
 * `TEST_DATABASE_URL`: when set (`postgres://…`), every app the helpers build stores
 * into PostgreSQL, each in a schema of its own; unset, into the embedded store.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL

/**
 * A fresh store for one test: a data directory, and with {@link TEST_DATABASE_URL}
 * an empty PostgreSQL schema (dropped at teardown) that the URL selects through
 * `search_path`. Pass the result to {@link build} to share it between apps.
 */
export async function freshStore(t: TestContext): Promise<Pick<AppConfig, 'dataDir' | 'databaseUrl'>> {
  const dataDir = join(t.testdir(), 'data')
  if (TEST_DATABASE_URL === undefined) return { dataDir }
  const schema = `test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await admin.connect()
  await admin.query(`create schema ${schema}`)
  await admin.end()
  t.teardown(async () => {
    const cleanup = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await cleanup.connect()
    await cleanup.query(`drop schema ${schema} cascade`)
    await cleanup.end()
  })
  const url = new URL(TEST_DATABASE_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return { dataDir, databaseUrl: url.toString() }
}

/** A token valid in every app built by {@link build}. */
export const TOKEN = 'test-token-0123456789abcdef'
/** A second valid token (rotation). */
export const OTHER_TOKEN = 'rotated-token-0123456789abcdef'

/** Headers of an authenticated JSON request. */
export const JSON_HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } as const

/**
 * Builds the application on a fresh store (see {@link freshStore}), closed when the
 * test ends.
 * @param overrides - configuration to change; `dataDir`/`databaseUrl` (e.g. from
 *   {@link freshStore}) reuse a store, to restart on the same data.
 */
export async function build(t: TestContext, overrides: Partial<AppConfig> = {}): Promise<FastifyInstance> {
  const store = overrides.dataDir === undefined && overrides.databaseUrl === undefined ? await freshStore(t) : {}
  const app = await createApp({ tokens: [TOKEN, OTHER_TOKEN], bodyLimit: 65536, ...store, ...overrides } as AppConfig)
  t.teardown(() => app.close())
  return app
}

const contract = loadContract()
const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true })
ajv.addFormat('int32', true).addFormat('int64', true)
ajv.addSchema(contract, 'contract')

/** Resolves a local JSON pointer (`#/a/b`) in the contract. */
function resolve(pointer: string): Record<string, unknown> {
  return pointer
    .slice(2)
    .split('/')
    .reduce<Record<string, unknown>>((node, part) => node[part.replace(/~1/g, '/').replace(/~0/g, '~')] as Record<string, unknown>, contract)
}

/**
 * Checks a response of `POST /plants` against the contract: its status is declared,
 * its content type is the declared one, and its body matches the declared schema.
 *
 * @returns a list of problems; empty when the response conforms.
 */
export function contractViolations(response: LightMyRequestResponse | { statusCode: number; headers: Record<string, unknown>; body: string }): string[] {
  const responses = (contract.paths['/plants']!.post as { responses: Record<string, { $ref?: string }> }).responses
  const declared = responses[String(response.statusCode)]
  if (declared === undefined) return [`status ${response.statusCode} is not declared`]
  const pointer = declared.$ref ?? `#/paths/~1plants/post/responses/${response.statusCode}`
  const media = (resolve(pointer).content as Record<string, unknown>)['application/json']
  const problems: string[] = []
  if (!String(response.headers['content-type']).startsWith('application/json')) {
    problems.push(`content type ${String(response.headers['content-type'])} is not application/json`)
  }
  const validate = ajv.getSchema(`contract${pointer}/content/application~1json/schema`) ?? ajv.compile({ $ref: `contract${pointer}/content/application~1json/schema` })
  if (media === undefined || !validate(JSON.parse(response.body))) problems.push(ajv.errorsText(validate.errors))
  return problems
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
