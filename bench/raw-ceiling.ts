/**
 * The ceiling of the benchmark (`npm run bench`): the least a Node HTTP server can
 * do for `POST /plants` on this machine. Plain `node:http`, no framework, nothing
 * stored: it checks the bearer token (constant-time, like @fastify/bearer-auth),
 * checks the media type, reads and `JSON.parse`s the body, and writes the Plant
 * (`{"name","tag"}`). Every other target is reported as a ratio of this one.
 *
 * With `DATA_DIR` set it is the durable ceiling instead: the same server, and each
 * plant is also committed to SQLite before its 200, the way the embedded store
 * commits (better-sqlite3, WAL, `synchronous=FULL`, one transaction per batch of
 * the requests that arrive together), with one cached prepared statement and no
 * query builder, no replay or conflict check. The least a durable Node server can do.
 *
 * Environment (the same names as the service, so the bench starts both alike):
 * - `PLANT_STORE_TOKENS`: comma-separated accepted tokens (required);
 * - `HOST` (default 127.0.0.1), `PORT` (default 0 = a free port);
 * - `DATA_DIR`: directory for `plants.sqlite3` (durable ceiling only).
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

/**
 * Commits plants in batches: those queued in one event-loop turn share one
 * transaction (one fsync). The table is the service's, made by its own migrations,
 * and the file is opened with the store's settings; only the writes are raw.
 */
async function durableWriter(dataDir: string): Promise<(id: bigint, name: unknown, tag: unknown, done: () => void) => void> {
  // Loaded only here, so the plain ceiling carries none of the service's modules.
  const [{ loadConfig }, { openSqliteFile, openStore, SQLITE_FILE }, { migrateToLatest }] = await Promise.all([
    import('../service/config.js'),
    import('../service/store/database.js'),
    import('../service/store/migrate.js'),
  ])
  const store = openStore({ ...loadConfig(process.env), dataDir, databaseUrl: undefined, onConnectionError: () => undefined })
  await migrateToLatest(store)
  await store.close()
  const database = openSqliteFile(join(dataDir, SQLITE_FILE))
  const insert = database.prepare('insert into plant (id, name, tag) values (?, ?, ?) on conflict (id) do nothing')
  let queue: { id: bigint; name: unknown; tag: unknown; done: () => void }[] = []
  const commit = database.transaction((batch: typeof queue) => {
    for (const plant of batch) insert.run(plant.id, plant.name, plant.tag ?? null)
  })
  return (id, name, tag, done) => {
    if (queue.push({ id, name, tag, done }) > 1) return
    setImmediate(() => {
      const batch = queue
      queue = []
      commit(batch)
      for (const plant of batch) plant.done()
    })
  }
}

const store = process.env.DATA_DIR ? await durableWriter(process.env.DATA_DIR) : undefined

function reply(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) })
  response.end(text)
}

const server = createServer((request, response) => {
  if (request.method !== 'POST' || request.url !== '/plants') return reply(response, 404, { error: 404, message: 'Not Found' })
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
    const answer = () => reply(response, 200, plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag })
    if (store === undefined) return answer()
    // The bench's ids are above 2^53, which JSON.parse rounds: read the digits exactly.
    const id = /"id"\s*:\s*(-?\d+)/.exec(text)?.[1]
    if (id === undefined) return reply(response, 400, { error: 400, message: 'id is required' })
    store(BigInt(id), plant.name, plant.tag, answer)
  })
})

const shutdown = (): void => {
  server.close()
  server.closeAllConnections()
}
process.once('SIGTERM', shutdown)
process.once('SIGINT', shutdown)

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : ''}\n`)
})
