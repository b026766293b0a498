/** The image under test and its containers, through the podman CLI. */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { postgresSchema, type TestContext } from './app.ts'
import { lastLine, run } from './command.ts'
import { freePort } from './machine.ts'

/** Runs `podman ARGS`. @returns its stdout, trimmed. @throws when missing or failing. */
export async function podman(args: readonly string[], timeoutMs = 120_000) {
  return (await run('podman', args, { timeoutMs, install: 'apt-get install podman' })).stdout.trim()
}

let built: Promise<string> | undefined

/** `PLANT_STORE_IMAGE`, else the Dockerfile built once. @returns the image's name. */
export async function imageUnderTest() {
  const { PODMAN_BUILD_OPTIONS = '', PLANT_STORE_IMAGE } = process.env
  const [tag, root] = ['localhost/plant-store:test', fileURLToPath(new URL('../..', import.meta.url))]
  const build = ['build', '--format=docker', ...PODMAN_BUILD_OPTIONS.split(/\s+/).filter(Boolean), '--tag', tag, root]
  return (built ??= PLANT_STORE_IMAGE ? Promise.resolve(PLANT_STORE_IMAGE) : podman(build, 900_000).then(() => tag))
}

const uniqueName = (what: string): string => `plant-store-test-${what}-${randomBytes(4).toString('hex')}`

/** Creates a named volume, removed at teardown. @returns its name. */
export async function createVolume(t: TestContext) {
  const name = uniqueName('data')
  await podman(['volume', 'create', name])
  t.teardown(() => podman(['volume', 'rm', '--force', name]))
  return name
}

/** `--env NAME=value` for each of `env`. */
export const envOptions = (env: Record<string, string>): string[] =>
  Object.entries(env).flatMap(([name, value]) => ['--env', `${name}=${value}`])

/** A live container of {@link runContainer}. */
export type Container = Awaited<ReturnType<typeof runContainer>>

/** `podman run -d`, port 3000 on 127.0.0.1 (`url`), removed at teardown. @returns once live. */
export async function runContainer(t: TestContext, image: string, options: readonly string[] = [], timeoutMs = 30_000) {
  const name = uniqueName('run')
  t.teardown(() => podman(['rm', '--force', '--volumes', '--time', '0', name]))
  await podman(['run', '--detach', '--name', name, '--publish', '127.0.0.1::3000', ...options, image])
  const container = {
    name,
    url: `http://${await podman(['port', name, '3000/tcp'])}`,
    logs: async () => Object.values(await run('podman', ['logs', name], { timeoutMs: 30_000 })).join(''),
    inspect: (template: string) => podman(['inspect', '--format', template, name]),
  }
  await waitUntil(`${name} to answer GET /health/live with 200`, timeoutMs, async () => {
    if ((await container.inspect('{{.State.Running}}')) !== 'true') {
      const [logs, code] = [await container.logs(), await container.inspect('{{.State.ExitCode}}')]
      throw Object.assign(new Error(`container ${name} exited (code ${code}) before it was live: ${lastLine(logs)}`), {
        output: logs.trimEnd().split('\n').slice(-40).join('\n'),
      })
    }
    const response = await fetch(`${container.url}/health/live`).catch(() => undefined)
    await response?.body?.cancel()
    return response?.status === 200
  })
  return container
}

/** Polls `probe` every 50 ms until true. @throws after `timeoutMs`. */
export async function waitUntil(what: string, timeoutMs: number, probe: () => Promise<boolean>) {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Spawns `command ARGS`, stopped at teardown, until `ready(stderr)`. @throws when it exits first. */
export async function startDaemon(
  t: TestContext,
  [command, ...args]: readonly string[],
  ready: (stderr: string) => boolean | Promise<boolean>,
  { timeoutMs = 10_000, signal = 'SIGTERM' as NodeJS.Signals } = {},
) {
  const child = spawn(command!, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  child.on('error', (error) => (stderr += error.message))
  const exited = once(child, 'close')
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    await exited
  })
  await waitUntil(`${command} to be ready`, timeoutMs, async () => {
    if (child.exitCode !== null) throw new Error(`${command} did not start: ${stderr}`)
    return ready(stderr)
  })
  return child
}

/** A random bearer token (RFC 6750 §2.1 alphabet). */
export function randomToken() {
  return randomBytes(24).toString('base64url')
}

/** `podman run` options of a hardened deployment, the tokens from `tokensFile`. */
export function hardened(tokensFile: string) {
  const secret = '/run/secrets/plant_store_tokens'
  const options = '--read-only --read-only-tmpfs=false --cap-drop=ALL --security-opt=no-new-privileges'.split(' ')
  return [...options, '--volume', `${tokensFile}:${secret}:ro`, '--env', `PLANT_STORE_TOKENS_FILE=${secret}`]
}

/** Writes `token` to a secret file, removed at teardown. @returns its path. */
export function tokensFile(t: TestContext, token: string) {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-secrets-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'tokens'), `${token}\n`, { mode: 0o444 })
  return join(dir, 'tokens')
}

/** The IPv4 gateway and subnet of podman's default network. */
async function bridgeGateway(): Promise<{ gateway: string; subnet: string }> {
  const subnets = await podman(['network', 'inspect', '--format', '{{json .Subnets}}', 'podman'])
  const ipv4 = JSON.parse(subnets).find(({ subnet }: { subnet: string }) => subnet.includes('.'))
  if (ipv4 === undefined) throw new Error(`podman's default network has no IPv4 subnet: ${subnets}`)
  return ipv4
}

/** A replica: its address on the bridge, and its upstream `127.0.0.1:<published port>`. */
export type Replica = Container & { readonly upstream: string; readonly address: string }

/** `count` hardened replicas on a fresh schema through a socat relay on the bridge's gateway, trusted as a proxy. */
export async function startReplicas(
  t: TestContext,
  image: string,
  count: number,
  token: string,
  env: Record<string, string>,
) {
  const [bridge, schema, port] = await Promise.all([bridgeGateway(), postgresSchema(t), freePort()])
  const target = new URL(schema.url)
  // IP_FREEBIND (SOL_IP 0, option 15): the bridge's address exists only once a container is on it.
  const listen =
    `TCP4-LISTEN:${port},bind=${bridge.gateway},setsockopt-listen=0:15:x01000000,` +
    `reuseaddr,fork,backlog=128,range=${bridge.subnet}`
  const relay = ['socat', '-d', '-d', listen, `TCP:${target.hostname}:${target.port || 5432}`]
  await startDaemon(t, relay, (stderr) => / listening on /.test(stderr), { timeoutMs: 5000 })
  Object.assign(target, { hostname: bridge.gateway, port: String(port) })
  const options = [
    ...hardened(tokensFile(t, token)),
    ...envOptions({ DATABASE_URL: target.toString(), LOG_LEVEL: 'info', TRUST_PROXY: bridge.gateway, ...env }),
  ]
  return Promise.all(
    Array.from({ length: count }, async () => {
      const container = await runContainer(t, image, options, 60_000)
      const address = await container.inspect('{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}')
      return { ...container, address, upstream: new URL(container.url).host }
    }),
  )
}

type LogLine = { msg: string; requestId?: string; req?: { remoteAddress?: string; remotePort?: number } }

/** The "request completed" line of `requestId` and the replica that logged it. */
export async function requestLine(replicas: readonly Replica[], requestId: string) {
  let found: { line: LogLine; replica: Replica } | undefined
  await waitUntil(`a replica to log request ${requestId}`, 10_000, async () => {
    for (const replica of replicas)
      for (const text of (await replica.logs()).split('\n').filter((line) => line.includes(`"${requestId}"`))) {
        const line = JSON.parse(text) as LogLine
        if (line.requestId === requestId && line.msg === 'request completed') found = { line, replica }
      }
    return found !== undefined
  })
  return found!
}
