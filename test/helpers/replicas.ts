/**
 * Replicas of the image on one PostgreSQL, as an operator runs them: containers on
 * podman's default bridge network, each hardened (read-only root, no capabilities,
 * no privilege gain, tokens from a read-only secret file), all on the host's
 * PostgreSQL in a schema of the test's own.
 *
 * How a container reaches the host's PostgreSQL (the tests' `POSTGRES_URL`): through
 * the host's address on the bridge ({@link bridgeGateway}), where the test listens
 * with `socat` (Debian's package) and relays to PostgreSQL's own address
 * ({@link postgresOnBridge}). The host's PostgreSQL is left as it is (e.g. on
 * loopback only, trusting 127.0.0.1): the relay accepts connections from the
 * bridge's subnet only, and lives as long as the test.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { postgresSchema, type TestContext } from './app.js'
import { freePort } from './machine.js'
import { type Container, podman, runContainer, waitUntil } from './podman.js'

/** The port the image's service listens on (its `PORT`). */
export const SERVICE_PORT = 3000

/** podman's default network (`podman`) as the containers on it see it. */
export interface Bridge {
  /** The host's address on the bridge: the containers' default gateway, and the peer address of every connection the host opens to them. */
  readonly gateway: string
  /** The bridge's subnet, e.g. `10.88.0.0/16`. */
  readonly subnet: string
}

/**
 * podman's default bridge network, read from `podman network inspect podman`. The
 * bridge interface itself exists only while a container is attached to it.
 * @throws when podman fails or the network has no IPv4 subnet.
 */
export async function bridgeGateway(): Promise<Bridge> {
  const subnets = JSON.parse(await podman(['network', 'inspect', '--format', '{{json .Subnets}}', 'podman'])) as Array<{ subnet: string; gateway: string }>
  const ipv4 = subnets.find((subnet) => subnet.subnet.includes('.'))
  if (ipv4 === undefined) throw new Error(`podman's default network has no IPv4 subnet: ${JSON.stringify(subnets)}`)
  return { gateway: ipv4.gateway, subnet: ipv4.subnet }
}

/**
 * Relays `bridge.gateway`:<a free port> to the host's PostgreSQL at `target` (an
 * address of the host, e.g. 127.0.0.1:5432) with socat, for containers on the
 * bridge; stopped at teardown. The listening
 * socket binds with IP_FREEBIND (the bridge's address may not exist yet: podman
 * creates the interface with the first container) and accepts the bridge's subnet only.
 * @returns the host and port the containers connect to.
 * @throws when socat is not installed or does not listen within 5 s.
 */
export async function postgresOnBridge(t: TestContext, bridge: Bridge, target: { host: string; port: number }): Promise<{ host: string; port: number }> {
  const port = await freePort()
  // setsockopt-listen=SOL_IP:IP_FREEBIND:1 (0:15, a 4-byte int) before bind.
  const listen = `TCP4-LISTEN:${port},bind=${bridge.gateway},setsockopt-listen=0:15:x01000000,reuseaddr,fork,backlog=128,range=${bridge.subnet}`
  // -d -d: socat reports "listening on" once it listens (and each connection after).
  const relay: ChildProcess = spawn('socat', ['-d', '-d', listen, `TCP:${target.host}:${target.port}`], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  relay.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4096)))
  // 'close', not 'exit': it also comes when socat could not be started (ENOENT).
  const exited = once(relay, 'close')
  let running = true
  void exited.then(() => (running = false))
  relay.on('error', () => {}) // reported below, once closed
  t.teardown(async () => {
    if (running) relay.kill()
    await exited
  })
  await waitUntil(`socat to listen on ${bridge.gateway}:${port}`, 5000, async () => {
    if (!running) throw new Error(`socat (apt-get install socat) did not start: ${stderr || 'not found'}`)
    return / listening on /.test(stderr)
  })
  return { host: bridge.gateway, port }
}

/**
 * A replica: a running container of the image, and how a gateway on the same host
 * reaches it.
 *
 * The gateway's upstream is the replica's port published on 127.0.0.1, not its
 * address on the bridge: a stopped container's published port refuses connections
 * at once, so the gateway moves on to another replica; its bridge address instead
 * answers nothing (the gateway waits out its connect timeout), and once no
 * container is left on the bridge the interface is gone and packets to the address
 * follow the host's default route. Either way a replica sees the gateway's
 * connections come from {@link Bridge.gateway} (podman masquerades them).
 */
export interface Replica extends Container {
  /** `127.0.0.1:<published port>`: the `server` of the gateway's upstream. */
  readonly upstream: string
  /** The container's address on the bridge. */
  readonly address: string
}

/** What {@link startReplicas} needs. */
export interface ReplicaOptions {
  /** The image to run. */
  readonly image: string
  /** How many replicas. */
  readonly count: number
  /** The bearer token the replicas accept, written to their secret file. */
  readonly token: string
  /** Further environment of every replica, e.g. `TRUST_PROXY`. */
  readonly env?: Record<string, string>
}

/**
 * `podman run` options of a hardened deployment: a read-only root file system with
 * no writable tmpfs (as `docker run --read-only`; podman alone would add tmpfs on
 * /tmp, /var/tmp and /run), no capabilities, no privilege gain, the tokens from the
 * read-only secret file `tokensFile` mounted at /run/secrets/plant_store_tokens.
 */
export function hardened(tokensFile: string): string[] {
  return [
    '--read-only',
    '--read-only-tmpfs=false',
    '--cap-drop=ALL',
    '--security-opt=no-new-privileges',
    '--volume',
    `${tokensFile}:/run/secrets/plant_store_tokens:ro`,
    '--env',
    'PLANT_STORE_TOKENS_FILE=/run/secrets/plant_store_tokens',
  ]
}

/**
 * Starts `count` hardened replicas of `image` at once, on an empty PostgreSQL schema
 * of the host's reached through {@link postgresOnBridge} (they apply the migrations
 * together, under the migrator's lock). Each is removed at teardown, with the
 * secret file and the schema.
 * @returns once every replica is live, in start order.
 * @throws when a replica exits or is not live within 60 s (with its logs).
 */
export async function startReplicas(t: TestContext, options: ReplicaOptions): Promise<Replica[]> {
  const secrets = mkdtempSync(join(tmpdir(), 'plant-store-secrets-'))
  t.teardown(() => rmSync(secrets, { recursive: true, force: true }))
  const tokensFile = join(secrets, 'plant_store_tokens')
  // Readable by the image's user (uid 1000); the directory stays the host's.
  writeFileSync(tokensFile, `${options.token}\n`, { mode: 0o444 })

  const [bridge, schema] = await Promise.all([bridgeGateway(), postgresSchema(t)])
  const databaseUrl = new URL(schema.url)
  const postgres = await postgresOnBridge(t, bridge, { host: databaseUrl.hostname, port: Number(databaseUrl.port || 5432) })
  databaseUrl.hostname = postgres.host
  databaseUrl.port = String(postgres.port)
  const env = { DATABASE_URL: databaseUrl.toString(), LOG_LEVEL: 'info', ...options.env }
  const run = hardened(tokensFile).concat(Object.entries(env).flatMap(([name, value]) => ['--env', `${name}=${value}`]))
  return Promise.all(
    Array.from({ length: options.count }, async () => {
      const container = await runContainer(t, options.image, run, 60_000)
      const address = await container.inspect('{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}')
      return { ...container, address, upstream: new URL(container.url).host }
    }),
  )
}

/** A bearer token of the RFC 6750 §2.1 alphabet, known only to this run. */
export function randomToken(): string {
  return randomBytes(24).toString('base64url')
}

/** One JSON log line of the service (pino), with the fields the tests read. */
export interface LogLine {
  msg: string
  requestId?: string
  req?: { remoteAddress?: string; remotePort?: number }
  [field: string]: unknown
}

/** The JSON lines a container has written so far (other lines, e.g. a crash's stack, are left out). */
export async function logLines(container: Container): Promise<LogLine[]> {
  return (await container.logs())
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine)
}

/**
 * The log line `msg` of the request `requestId`, from whichever of `replicas` wrote
 * it; podman's log may trail the response a little, so this waits (at most 10 s).
 * @returns the line and the replica that wrote it.
 * @throws when no replica logs it in time.
 */
export async function requestLine(replicas: readonly Replica[], requestId: string, msg = 'request completed'): Promise<{ line: LogLine; replica: Replica }> {
  let found: { line: LogLine; replica: Replica } | undefined
  await waitUntil(`a replica to log "${msg}" of request ${requestId}`, 10_000, async () => {
    for (const replica of replicas) {
      const line = (await logLines(replica)).find((entry) => entry.requestId === requestId && entry.msg === msg)
      if (line) found = { line, replica }
    }
    return found !== undefined
  })
  return found!
}
