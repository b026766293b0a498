/**
 * The ceilings of the benchmark (`npm run bench`): the least a Node HTTP server can
 * do for `POST /plants` on this machine. Plain `node:http`, no framework: it checks
 * the bearer token (constant-time, like @fastify/bearer-auth), checks the media
 * type, reads and `JSON.parse`s the body, and writes the Plant (`{"name","tag"}`).
 *
 * - Nothing set: the ceiling, nothing stored.
 * - `DATA_DIR`: the SQLite durable ceiling: each plant is also committed to SQLite
 *   before its 200, the way the embedded store commits (better-sqlite3, WAL,
 *   `synchronous=FULL`), the plants of one event-loop turn in one transaction.
 * - `DATABASE_URL`: the PostgreSQL durable ceiling: the plants of one event-loop
 *   turn go to PostgreSQL in one multi-row `INSERT` through `pg` (autocommit, so
 *   one durable commit per batch), at most `DATABASE_POOL_SIZE` (default 10) in
 *   flight, like the service's group commit; plants that arrive while every
 *   connection is busy join the next batch.
 *
 * Both durable ceilings use one cached or parameterised statement, no query builder,
 * no replay or conflict check: the least a durable Node server can do. Their table
 * is the service's, made by its own migrations.
 *
 * Environment (the same names as the service, so the bench starts both alike):
 * - `PLANT_STORE_TOKENS`: comma-separated accepted tokens (required);
 * - `HOST` (default 127.0.0.1), `PORT` (default 0 = a free port);
 * - `DATA_DIR` or `DATABASE_URL` (at most one), `DATABASE_POOL_SIZE`.
 *
 * Prints `listening <port>` on stdout once it accepts connections.
 *
 * @module
 */
import { createServer, type ServerResponse } from 'node:http'
import { timingSafeEqual } from 'node:crypto'
import { join } from 'node:path'

const tokens = (process.env.PLANT_STORE_TOKENS ?? '')
  .split(',')
  .filter((token) => token !== '')
  .map((token) => Buffer.from(token))
if (tokens.length === 0) {
  process.stderr.write('raw-ceiling: PLANT_STORE_TOKENS is required\n')
  process.exit(1)
}

/** True when `header` is `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1) with a configured token. */
function authorized(header: string | undefined): boolean {
  if (header === undefined || header.length < 8 || header.slice(0, 7).toLowerCase() !== 'bearer ') return false
  const sent = Buffer.from(header.slice(7))
  return tokens.some((token) => token.length === sent.length && timingSafeEqual(token, sent))
}

/** A plant waiting for its commit; `done` is called once, with the error when the commit failed. */
interface Pending {
  readonly id: bigint
  readonly name: unknown
  readonly tag: unknown
  readonly done: (error?: Error) => void
}

/** A durable writer: `write` queues one plant for the next batch; `close` releases the database. */
interface Writer {
  write(plant: Pending): void
  close(): Promise<void>
}

/**
 * Commits plants to SQLite in batches: those queued in one event-loop turn share
 * one transaction (one fsync). The table is the service's, made by its own migrations,
 * and the file is opened with the store's settings; only the writes are raw.
 */
async function sqliteWriter(dataDir: string): Promise<Writer> {
  // Loaded only here, so the plain ceiling carries none of the service's modules.
  const [{ loadConfig }, { openSqlite, openSqliteFile, SQLITE_FILE }, { migrateToLatest }] = await Promise.all([
    import('../service/config.ts'),
    import('../service/store/sqlite.ts'),
    import('../service/store/migrate.ts'),
  ])
  const store = openSqlite({
    ...loadConfig(process.env),
    dataDir,
    databaseUrl: undefined,
    onConnectionError: () => undefined,
  })
  await migrateToLatest(store)
  await store.close()
  const database = openSqliteFile(join(dataDir, SQLITE_FILE))
  const insert = database.prepare('insert into plant (id, name, tag) values (?, ?, ?) on conflict (id) do nothing')
  let queue: Pending[] = []
  const commit = database.transaction((batch: Pending[]) => {
    for (const plant of batch) insert.run(plant.id, plant.name, plant.tag ?? null)
  })
  return {
    write: (plant) => {
      if (queue.push(plant) > 1) return
      setImmediate(() => {
        const batch = queue
        queue = []
        let failed: Error | undefined
        try {
          commit(batch)
        } catch (error) {
          failed = error as Error
        }
        for (const each of batch) each.done(failed)
      })
    },
    close: async () => void database.close(),
  }
}

/**
 * Commits plants to PostgreSQL in batches: those queued in one event-loop turn
 * share one multi-row `INSERT` (autocommit: one commit), with at most the pool size
 * in flight; plants queued while every connection is busy go out together once
 * one is free.
 */
async function postgresWriter(databaseUrl: string): Promise<Writer> {
  const [{ loadConfig }, { openPostgres }, { migrateToLatest }, { default: pg }] = await Promise.all([
    import('../service/config.ts'),
    import('../service/store/postgres.ts'),
    import('../service/store/migrate.ts'),
    import('pg'),
  ])
  const config = loadConfig(process.env)
  const store = openPostgres({ ...config, databaseUrl, onConnectionError: () => undefined })
  await migrateToLatest(store)
  await store.close()
  const pool = new pg.Pool({ connectionString: databaseUrl, max: config.databasePoolSize })
  pool.on('error', () => undefined) // an idle connection dropped; the next query opens another
  let queue: Pending[] = []
  let inFlight = 0
  let scheduled = false
  const commit = async (batch: Pending[]): Promise<void> => {
    const rows = batch.map((_, index) => `($${3 * index + 1}, $${3 * index + 2}, $${3 * index + 3})`).join(', ')
    const values = batch.flatMap((plant) => [String(plant.id), plant.name, plant.tag ?? null])
    let failed: Error | undefined
    try {
      await pool.query(`insert into plant (id, name, tag) values ${rows} on conflict (id) do nothing`, values)
    } catch (error) {
      failed = error as Error
    }
    for (const plant of batch) plant.done(failed)
  }
  const schedule = (): void => {
    if (scheduled || inFlight >= config.databasePoolSize || queue.length === 0) return
    scheduled = true
    setImmediate(() => {
      scheduled = false
      const batch = queue
      queue = []
      inFlight++
      void commit(batch).finally(() => {
        inFlight--
        schedule()
      })
    })
  }
  return {
    write: (plant) => {
      queue.push(plant)
      schedule()
    },
    close: () => pool.end(),
  }
}

if (process.env.DATA_DIR && process.env.DATABASE_URL) {
  process.stderr.write('raw-ceiling: set DATA_DIR or DATABASE_URL, not both\n')
  process.exit(1)
}
const store: Writer | undefined = process.env.DATA_DIR
  ? await sqliteWriter(process.env.DATA_DIR)
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
  if (request.method !== 'POST' || request.url !== '/plants')
    return reply(response, 404, { error: 404, message: 'Not Found' })
  if (!authorized(request.headers.authorization)) {
    response.setHeader('www-authenticate', 'Bearer realm="plant-store"')
    return reply(response, 401, { error: 401, message: 'A bearer token is required' })
  }
  if (!(request.headers['content-type'] ?? '').startsWith('application/json')) {
    return reply(response, 415, { error: 415, message: 'Unsupported Media Type' })
  }
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    let plant: { name?: unknown; tag?: unknown }
    const text = Buffer.concat(chunks).toString('utf8')
    try {
      plant = JSON.parse(text) as typeof plant
    } catch {
      return reply(response, 400, { error: 400, message: 'Body is not valid JSON' })
    }
    const answer = () =>
      reply(response, 200, plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag })
    if (store === undefined) return answer()
    // The bench's ids are above 2^53, which JSON.parse rounds: read the digits exactly.
    const id = /"id"\s*:\s*(-?\d+)/.exec(text)?.[1]
    if (id === undefined) return reply(response, 400, { error: 400, message: 'id is required' })
    store.write({
      id: BigInt(id),
      name: plant.name,
      tag: plant.tag,
      done: (error) => (error === undefined ? answer() : reply(response, 503, { error: 503, message: error.message })),
    })
  })
})

const shutdown = (): void => {
  server.close(() => void store?.close())
  server.closeAllConnections()
}
process.once('SIGTERM', shutdown)
process.once('SIGINT', shutdown)

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : ''}\n`)
})
