/**
 * The example gateway, `deploy/nginx/`, with Debian's nginx on a free loopback port (TLS),
 * and a raw HTTP/1.1 client of it. The test writes only the files an operator edits,
 * `upstreams.conf` (with the shipped server parameters) and `listen.conf`.
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import type { TestContext } from './app.ts'
import { run } from './command.ts'
import { assertErrorBody } from './contract.ts'
import { freePort } from './machine.ts'
import { waitUntil } from './podman.ts'
import { exchange, type RawResponse, wholeRequest } from './raw-http.ts'

/** Debian's nginx. */
export const NGINX = '/usr/sbin/nginx'
/** The shipped example configuration. */
export const NGINX_DIR = fileURLToPath(new URL('../../deploy/nginx/', import.meta.url))
/** The path prefix the shipped configuration mounts the service under (e.g. `/plant-store`). */
export const GATEWAY_PREFIX = /location (\/\S+)\/plants \{/.exec(
  readFileSync(join(NGINX_DIR, 'nginx.conf'), 'utf8'),
)![1]!
/** The public path of `POST /plants` through the gateway. */
export const PLANTS = `${GATEWAY_PREFIX}/plants`
const SERVER_PARAMETERS =
  /^server \S+((?: [^;]+)?);/m.exec(readFileSync(join(NGINX_DIR, 'upstreams.conf'), 'utf8'))?.[1] ?? ''

/**
 * A running gateway: `origin` (`https://127.0.0.1:<port>`), `url` (with the prefix), `ca` (its certificate), its access
 * log.
 */
export type Gateway = Awaited<ReturnType<typeof startGateway>>

/**
 * Starts nginx with the shipped configuration in front of `upstreams` (`host:port` each); stopped and removed at
 * teardown.
 * @returns once it accepts connections.
 * @throws when nginx is missing, refuses the configuration, or does not listen within 10 s.
 */
export async function startGateway(t: TestContext, { upstreams }: { upstreams: readonly string[] }) {
  if (!existsSync(NGINX)) throw new Error(`nginx is missing at ${NGINX} (apt-get install nginx-light)`)
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-gateway-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  chmodSync(dir, 0o755) // nginx's unprivileged workers read it
  for (const file of ['nginx.conf', 'errors.conf']) copyFileSync(join(NGINX_DIR, file), join(dir, file))
  const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')]
  await selfSignedCertificate(cert, key)
  writeFileSync(
    join(dir, 'upstreams.conf'),
    upstreams.map((address) => `server ${address}${SERVER_PARAMETERS};\n`).join(''),
  )
  const log = () => (existsSync(join(dir, 'access.log')) ? readFileSync(join(dir, 'access.log'), 'utf8') : '')
  // Whole lines only: the last one may still be on its way.
  /** The access log so far, one object per request (the shipped JSON format). */
  const accessLog = () => (log().match(/.+\n/g) ?? []).map((line) => JSON.parse(line) as Record<string, unknown>)

  // A port found free may be taken before nginx binds it: try another.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    writeFileSync(
      join(dir, 'listen.conf'),
      `listen 127.0.0.1:${port} ssl http2;\nserver_name localhost;\n` +
        `ssl_certificate ${cert};\nssl_certificate_key ${key};\n`,
    )
    const child = spawn(NGINX, ['-c', join(dir, 'nginx.conf'), '-p', `${dir}/`, '-g', 'daemon off;'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = once(child, 'exit')
    t.teardown(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT')
      await exited
    })
    const failure = await waitUntil('nginx to listen', 10_000, async () => {
      if (child.exitCode !== null) throw new Error(stderr)
      const socket = connect(port, '127.0.0.1').on('error', () => {})
      const accepted = await once(socket, 'connect').then(Boolean, () => false)
      socket.destroy()
      return accepted
    }).catch((error: Error) => error)
    if (failure === undefined) {
      const origin = `https://127.0.0.1:${port}`
      /** The access log entry of request `requestId` (written after the response: waits at most 5 s). */
      const accessEntry = async (requestId: string) => {
        await waitUntil(`the access log entry of ${requestId}:\n${log()}`, 5000, async () =>
          accessLog().some((line) => line.requestId === requestId),
        )
        return accessLog().find((line) => line.requestId === requestId)!
      }
      return { origin, url: `${origin}${GATEWAY_PREFIX}`, ca: readFileSync(cert, 'utf8'), accessLog, accessEntry }
    }
    child.kill('SIGKILL')
    if (!/Address already in use/.test(failure.message) || attempt === 3)
      throw new Error(`nginx did not start: ${failure.message}`)
  }
}

/**
 * Writes a self-signed P-256 certificate for `localhost` and 127.0.0.1 (one day) and its key, PEM, with `openssl`.
 * @throws when openssl fails.
 */
export async function selfSignedCertificate(cert: string, key: string): Promise<void> {
  const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1']
  await run(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      ...subject,
      '-keyout',
      key,
      '-out',
      cert,
    ],
    {
      install: 'apt-get install openssl',
    },
  )
}

/** Headers of an authenticated JSON request with `token`. */
export function authorized(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }
}

/** A whole `POST` of `body` with `headers` to `path` (default {@link PLANTS}). */
export function post(body: string, headers: Record<string, string>, path = PLANTS): string {
  return wholeRequest('POST', path, headers, body)
}

/** A whole `GET path`. */
export function get(path: string): string {
  return wholeRequest('GET', path)
}

/**
 * Sends raw bytes to `gateway` over TLS (string parts as separate writes), from `localAddress`, and reads the response.
 */
export async function send(gateway: Gateway, raw: string | string[], localAddress?: string): Promise<RawResponse> {
  return exchange({ url: gateway.origin, ca: gateway.ca, localAddress }, raw)
}

/** A NewPlant JSON body of exactly `size` bytes. */
export function bodyOf(size: number, id: number): string {
  const head = `{"id":${id},"name":"`
  return `${head}${'n'.repeat(size - head.length - 2)}"}`
}

/** The response has the `Error` body with `error` equal to `status`, and the gateway's request id. */
export function errorBody(t: Test, response: RawResponse, status: number): void {
  assertErrorBody(t, response, status)
  t.match(response.headers['x-request-id'], /^[0-9a-f]{32}$/, "the gateway's request id")
}

/**
 * Who answered `response`, from the access log: `upstream` (replicas tried, `, `-separated; empty when nginx answered
 * itself) and its status.
 */
export async function answeredBy(
  gateway: Gateway,
  response: RawResponse,
): Promise<{ upstream: string; upstreamStatus: string }> {
  const entry = await gateway.accessEntry(response.headers['x-request-id']!)
  return { upstream: entry.upstream as string, upstreamStatus: entry.upstreamStatus as string }
}
