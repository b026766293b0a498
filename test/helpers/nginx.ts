/**
 * The example gateway, `deploy/nginx/`, on Debian's nginx (TLS, a free loopback port), only the files an operator edits
 * written.
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import type { TestContext } from './app.ts'
import { run } from './command.ts'
import { assertErrorBody, contractViolations } from './contract.ts'
import { freePort } from './machine.ts'
import { startDaemon, waitUntil } from './podman.ts'
import { connected, exchange, type RawResponse, wholeRequest } from './raw-http.ts'

export const NGINX = '/usr/sbin/nginx'
export const NGINX_DIR = fileURLToPath(new URL('../../deploy/nginx/', import.meta.url))
/** The path prefix the service is mounted under (e.g. `/plant-store`). */
export const GATEWAY_PREFIX = /location (\/\S+)\/plants \{/.exec(
  readFileSync(join(NGINX_DIR, 'nginx.conf'), 'utf8'),
)![1]!
/** The public path of `/plants`. */
export const PLANTS = `${GATEWAY_PREFIX}/plants`
const SERVER_PARAMETERS =
  /^server \S+((?: [^;]+)?);/m.exec(readFileSync(join(NGINX_DIR, 'upstreams.conf'), 'utf8'))?.[1] ?? ''

/** An access log line: `upstream` the replicas tried, `, `-separated, empty when nginx answered. */
export type AccessEntry = Record<string, unknown> & Record<'requestId' | 'client' | 'uri' | 'upstream', string>

/** A running gateway: `origin` (`https://127.0.0.1:<port>`), `url` (with the prefix), `ca`, its access log. */
export type Gateway = Awaited<ReturnType<typeof startGateway>>

/** nginx before `upstreams` (`host:port`, or a service's URL), stopped at teardown. @returns once it listens. */
export async function startGateway(t: TestContext, upstreams: ReadonlyArray<string | { url: string }>) {
  if (!existsSync(NGINX)) throw new Error(`nginx is missing at ${NGINX} (apt-get install nginx-light)`)
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-gateway-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  chmodSync(dir, 0o755) // nginx's unprivileged workers read it
  for (const file of ['nginx.conf', 'errors.conf']) copyFileSync(join(NGINX_DIR, file), join(dir, file))
  const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')]
  await selfSignedCertificate(cert, key)
  const hosts = upstreams.map((upstream) => (typeof upstream === 'string' ? upstream : new URL(upstream.url).host))
  writeFileSync(join(dir, 'upstreams.conf'), hosts.map((host) => `server ${host}${SERVER_PARAMETERS};\n`).join(''))
  const log = () => (existsSync(join(dir, 'access.log')) ? readFileSync(join(dir, 'access.log'), 'utf8') : '')
  // Whole lines only: the last one may still be on its way.
  const accessLog = () => (log().match(/.+\n/g) ?? []).map((line) => JSON.parse(line) as AccessEntry)

  const accepts = (port: number) =>
    connected({ url: `http://127.0.0.1:${port}` }).then(
      (socket) => Boolean(socket.destroy()),
      () => false,
    )
  let port = 0
  // A free port may be taken before nginx binds it.
  for (let attempt = 1; port === 0; attempt++) {
    const candidate = await freePort()
    const listen = `listen 127.0.0.1:${candidate} ssl http2;\nserver_name localhost;\n`
    writeFileSync(join(dir, 'listen.conf'), `${listen}ssl_certificate ${cert};\nssl_certificate_key ${key};\n`)
    const nginx = [NGINX, '-c', join(dir, 'nginx.conf'), '-p', `${dir}/`, '-g', 'daemon off;']
    const started = await startDaemon(t, nginx, () => accepts(candidate), { signal: 'SIGQUIT' }).catch((e: Error) => e)
    if (!(started instanceof Error)) port = candidate
    else if (!/Address already in use/.test(started.message) || attempt === 3) throw started
  }
  const origin = `https://127.0.0.1:${port}`
  /** The access log entry of a response or request id (waits up to 5 s for it). */
  const accessEntry = async (of: RawResponse | string) => {
    const requestId = typeof of === 'string' ? of : of.headers['x-request-id']!
    const entry = () => accessLog().find((line) => line.requestId === requestId)
    await waitUntil(`the access log entry of ${requestId}:\n${log()}`, 5000, async () => entry() !== undefined)
    return entry()!
  }
  return { origin, url: `${origin}${GATEWAY_PREFIX}`, ca: readFileSync(cert, 'utf8'), accessLog, accessEntry }
}

/** Writes a self-signed certificate for `localhost` and 127.0.0.1 and its key (PEM). */
export async function selfSignedCertificate(cert: string, key: string) {
  const args = 'req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost -addext'
  const names = 'subjectAltName=DNS:localhost,IP:127.0.0.1'
  await run('openssl', [...args.split(' '), names, '-keyout', key, '-out', cert], {
    install: 'apt-get install openssl',
  })
}

/** Headers of an authenticated JSON request with `token`. */
export function authorized(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }
}

/** A whole `POST` of `body` with `headers` to `path` (default {@link PLANTS}). */
export function post(body: string, headers: Record<string, string>, path = PLANTS) {
  return wholeRequest('POST', path, headers, body)
}

/** A whole `GET path`. */
export function get(path: string) {
  return wholeRequest('GET', path)
}

/** Sends `raw` to `gateway` from `localAddress`. @returns the response. */
export async function send(gateway: Gateway, raw: string | string[], localAddress?: string) {
  return exchange({ url: gateway.origin, ca: gateway.ca, localAddress }, raw)
}

/** A NewPlant JSON body of exactly `size` bytes. */
export function bodyOf(size: number, id: number) {
  const head = `{"id":${id},"name":"`
  return `${head}${'n'.repeat(size - head.length - 2)}"}`
}

/** The `Error` body of `status` and the gateway's request id; with `declared`, declared for POST. */
export function errorBody(t: Test, response: RawResponse, status: number, declared?: string) {
  assertErrorBody(t, response, status)
  t.match(response.headers['x-request-id'], /^[0-9a-f]{32}$/, "the gateway's request id")
  if (declared !== undefined) t.same(contractViolations(response), [], `${declared}: declared for POST /plants`)
}
