/**
 * Runs the example gateway, `deploy/nginx/`, with Debian's nginx (`apt-get install
 * nginx-light`), for tests: TLS on a free loopback port, in front of the replicas a
 * test names.
 *
 * The shipped files are used as they are: `nginx.conf` and `errors.conf` are copied
 * verbatim into a directory of the test's own, which is nginx's prefix (`-p`: pid,
 * temporary files). Only the two files an operator edits are written by the test:
 * `upstreams.conf` (one `server` line per replica) and `listen.conf` (the port, and a
 * self-signed certificate made with Debian's `openssl`), each server line with the
 * parameters of the shipped one (`max_fails=0`). The access log is read
 * from the prefix directory, where the shipped configuration writes it. Includes rather than
 * placeholders: nginx reads them as it reads the operator's, nothing rewrites the
 * policy files, and the example ones stay valid nginx.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestContext } from './app.js'
import { run } from './command.js'
import { freePort } from './machine.js'

/** Debian's nginx. */
export const NGINX = '/usr/sbin/nginx'
/** The shipped example configuration. */
export const NGINX_DIR = fileURLToPath(new URL('../../deploy/nginx/', import.meta.url))
/** The files of {@link NGINX_DIR} used verbatim; the others are the operator's (see the module). */
const SHIPPED = ['nginx.conf', 'errors.conf']

/** The path prefix the shipped configuration mounts the service under, read from it (e.g. `/plant-store`). */
export const GATEWAY_PREFIX = /location (\/\S+)\/plants \{/.exec(readFileSync(join(NGINX_DIR, 'nginx.conf'), 'utf8'))![1]!

/** The parameters of the shipped `upstreams.conf`'s server lines (e.g. ` max_fails=0`), given to the test's replicas too. */
const SERVER_PARAMETERS = /^server \S+((?: [^;]+)?);/m.exec(readFileSync(join(NGINX_DIR, 'upstreams.conf'), 'utf8'))?.[1] ?? ''

/** A running gateway. */
export interface Gateway {
  /** `https://127.0.0.1:<port>`. */
  readonly origin: string
  /** The service's base URL through the gateway: {@link origin} + {@link GATEWAY_PREFIX}. */
  readonly url: string
  /** The gateway's certificate (PEM), for clients to trust; it names `localhost` and 127.0.0.1. */
  readonly ca: string
  /** The access log so far: one object per request (the shipped `plant_store` format). */
  accessLog(): Array<Record<string, unknown>>
  /**
   * The access log entry of the request with this id (the response's `X-Request-Id`):
   * nginx writes it once the response has gone, so this waits for it (at most 5 s).
   * @throws when it does not come.
   */
  accessEntry(requestId: string): Promise<Record<string, unknown>>
  /** nginx's error log (stderr) so far. */
  errorLog(): string
}

/** What the test chooses. */
export interface GatewayOptions {
  /** The replicas, `host:port` each (e.g. `new URL(url).host` of a listening app, or a container's published port). */
  readonly upstreams: readonly string[]
}

/**
 * Starts nginx with the shipped configuration in front of `upstreams`; stopped, and
 * its directory removed, at teardown.
 *
 * @returns once nginx accepts connections.
 * @throws when nginx is not installed, refuses the configuration, or does not listen within 10 s.
 */
export async function startGateway(t: TestContext, options: GatewayOptions): Promise<Gateway> {
  if (!existsSync(NGINX)) throw new Error(`nginx is missing at ${NGINX}: install it (apt-get install nginx-light) to run the gateway tests`)
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-gateway-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // nginx's workers run as an unprivileged user when the master is root: they must reach the prefix.
  chmodSync(dir, 0o755)
  for (const file of SHIPPED) copyFileSync(join(NGINX_DIR, file), join(dir, file))
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  await selfSignedCertificate(cert, key)
  writeFileSync(join(dir, 'upstreams.conf'), options.upstreams.map((address) => `server ${address}${SERVER_PARAMETERS};\n`).join(''))
  const ca = readFileSync(cert, 'utf8')

  // A port found free may be taken before nginx binds it: try another.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    writeFileSync(join(dir, 'listen.conf'), `listen 127.0.0.1:${port} ssl http2;\nserver_name localhost;\nssl_certificate ${cert};\nssl_certificate_key ${key};\n`)
    const started = await startNginx(t, dir, port)
    if ('child' in started) {
      const origin = `https://127.0.0.1:${port}`
      const written = () => (existsSync(join(dir, 'access.log')) ? readFileSync(join(dir, 'access.log'), 'utf8') : '')
      // Whole lines only: the last one may still be on its way.
      const accessLog = () => {
        const text = written()
        return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>)
      }
      const accessEntry = async (requestId: string) => {
        for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 25))) {
          const entry = accessLog().find((line) => line.requestId === requestId)
          if (entry) return entry
        }
        throw new Error(`no access log entry for ${requestId}:\n${written()}`)
      }
      return { origin, url: `${origin}${GATEWAY_PREFIX}`, ca, accessLog, accessEntry, errorLog: started.stderr }
    }
    if (!/Address already in use/.test(started.failure) || attempt === 3) throw new Error(`nginx did not start:\n${started.failure}`)
  }
}

/** Spawns nginx in the foreground (it runs until teardown) and waits until `port` accepts connections, or nginx exits. */
async function startNginx(t: TestContext, dir: string, port: number): Promise<{ child: ChildProcess; stderr: () => string } | { failure: string }> {
  const child = spawn(NGINX, ['-c', join(dir, 'nginx.conf'), '-p', `${dir}/`, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = once(child, 'exit')
  let running = true
  void exited.then(() => (running = false))
  const deadline = Date.now() + 10_000
  while (running && Date.now() < deadline) {
    if (await accepts(port)) {
      t.teardown(async () => {
        // SIGQUIT: graceful shutdown, open connections finish (nginx -s quit).
        if (running) child.kill('SIGQUIT')
        await exited
      })
      return { child, stderr: () => stderr }
    }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  child.kill('SIGKILL')
  await exited
  return { failure: stderr || 'no connection within 10 s' }
}

/** Whether a TCP connection to 127.0.0.1:`port` succeeds. */
async function accepts(port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1')
  try {
    await once(socket, 'connect')
    return true
  } catch {
    return false
  } finally {
    socket.destroy()
  }
}

/**
 * Writes a self-signed certificate for `localhost` and 127.0.0.1 (P-256, valid one
 * day) and its key, PEM, made by Debian's `openssl` CLI.
 * @throws when openssl fails.
 */
export async function selfSignedCertificate(cert: string, key: string): Promise<void> {
  await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
  ], { install: 'apt-get install openssl' })
}
