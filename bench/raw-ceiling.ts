/**
 * The benchmark's ceilings: the least a Node HTTP server can do for `POST /plants`. Plain `node:http`: it checks the
 * bearer token (constant-time), the media type, parses the body and answers the Plant. With `DATA_DIR` (SQLite, WAL,
 * `synchronous=FULL`, as the embedded store) or `DATABASE_URL` (PostgreSQL through `pg`, at most
 * `DATABASE_POOL_SIZE` batches in flight, default 10), each plant is committed first: those of one event-loop turn
 * in one transaction, into a table of the service's shape, `bench_plant`. No replay or conflict check.
 * Environment: `PLANT_STORE_TOKENS` (required), `HOST`, `PORT`, and at most one of `DATA_DIR` and `DATABASE_URL`.
 *
 * @module
 */
import { timingSafeEqual } from 'node:crypto'
import { createServer, type ServerResponse } from 'node:http'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { SQLITE_FILE } from './stores.ts'

const tokens = (process.env.PLANT_STORE_TOKENS ?? '')
  .split(',')
  .filter(Boolean)
  .map((token) => Buffer.from(token))
const TABLE =
  'create table if not exists bench_plant (id bigint primary key, name text not null, tag text, ' +
  'created_at timestamp not null default current_timestamp)'
const INSERT = 'insert into bench_plant (id, name, tag) values'

/** A plant waiting for its commit; `done` gets the error when the commit failed. */
interface Pending {
  readonly values: [bigint, unknown, unknown]
  readonly done: (error?: Error) => void
}

/** Commits the plants queued in one event-loop turn together, at most `limit` commits in flight. */
function batcher(limit: number, commit: (batch: Pending[]) => Promise<void>): (plant: Pending) => void {
  let queue: Pending[] = []
  let [inFlight, scheduled] = [0, false]
  const schedule = (): void => {
    if (scheduled || inFlight >= limit || queue.length === 0) return
    scheduled = true
    setImmediate(() => {
      const batch = queue
      ;[queue, scheduled] = [[], false]
      inFlight++
      void commit(batch)
        .then(
          () => batch.forEach((plant) => plant.done()),
          (error: Error) => batch.forEach((plant) => plant.done(error)),
        )
        .finally(() => {
          inFlight--
          schedule()
        })
    })
  }
  return (plant) => {
    queue.push(plant)
    schedule()
  }
}

function sqliteWriter(dataDir: string) {
  const database = new SQLite(join(dataDir, SQLITE_FILE))
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.exec(TABLE)
  const insert = database.prepare(`${INSERT} (?, ?, ?)`)
  const commit = database.transaction((batch: Pending[]) => batch.forEach((plant) => insert.run(plant.values)))
  return batcher(1, async (batch) => commit(batch))
}

async function postgresWriter(databaseUrl: string) {
  const size = Number(process.env.DATABASE_POOL_SIZE ?? 10)
  const pool = new pg.Pool({ connectionString: databaseUrl, max: size })
  pool.on('error', () => undefined) // an idle connection dropped; the next query opens another
  await pool.query(TABLE)
  return batcher(size, async (batch) => {
    const rows = batch.map((_, index) => `($${3 * index + 1}, $${3 * index + 2}, $${3 * index + 3})`)
    await pool.query(
      `${INSERT} ${rows.join(', ')}`,
      batch.flatMap((plant) => plant.values.map(String)),
    )
  })
}

const write = process.env.DATA_DIR
  ? sqliteWriter(process.env.DATA_DIR)
  : process.env.DATABASE_URL
    ? await postgresWriter(process.env.DATABASE_URL)
    : undefined

function reply(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  })
  response.end(text)
}

const server = createServer((request, response) => {
  const header = request.headers.authorization ?? ''
  const sent = Buffer.from(header.slice(7))
  if (
    !/^bearer /i.test(header) ||
    !tokens.some((token) => token.length === sent.length && timingSafeEqual(token, sent))
  )
    return reply(response, 401, { error: 401, message: 'A bearer token is required' })
  if (!request.headers['content-type']?.startsWith('application/json'))
    return reply(response, 415, { error: 415, message: 'Unsupported Media Type' })
  let text = ''
  request.setEncoding('utf8')
  request.on('data', (chunk: string) => (text += chunk))
  request.on('end', () => {
    let plant: { name?: unknown; tag?: unknown }
    try {
      plant = JSON.parse(text) as typeof plant
    } catch {
      return reply(response, 400, { error: 400, message: 'Body is not valid JSON' })
    }
    const answer = () => reply(response, 200, { name: plant.name, tag: plant.tag })
    // The ids are past 2^53, which JSON.parse rounds: their digits are read exactly.
    const id = /"id":(\d+)/.exec(text)?.[1]
    if (write === undefined || id === undefined) return answer()
    write({
      values: [BigInt(id), plant.name, plant.tag ?? null],
      done: (error) => (error ? reply(response, 503, { error: 503, message: error.message }) : answer()),
    })
  })
})
process.once('SIGTERM', () => server.close().closeAllConnections())
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1')
