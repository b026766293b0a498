/**
 * The ceiling of the benchmark (`npm run bench`): the least a Node HTTP server can
 * do for `POST /plants` on this machine. Plain `node:http`, no framework, nothing
 * stored: it checks the bearer token (constant-time, like @fastify/bearer-auth),
 * checks the media type, reads and `JSON.parse`s the body, and writes the Plant
 * (`{"name","tag"}`). Every other target is reported as a ratio of this one.
 *
 * Environment (the same names as the service, so the bench starts both alike):
 * - `PLANT_STORE_TOKENS`: comma-separated accepted tokens (required);
 * - `HOST` (default 127.0.0.1), `PORT` (default 0 = a free port).
 *
 * Prints `listening <port>` on stdout once it accepts connections.
 *
 * @module
 */
import { createServer, type ServerResponse } from 'node:http'
import { timingSafeEqual } from 'node:crypto'

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
    try {
      plant = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof plant
    } catch {
      return reply(response, 400, { error: 400, message: 'Body is not valid JSON' })
    }
    reply(response, 200, plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag })
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
