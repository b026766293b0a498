/**
 * Container health probe: `GET /health/live` on this process's own service, exit
 * status 0 when it answers 200, 1 otherwise (refused, timed out, any other status).
 *
 * It is the Dockerfile's `HEALTHCHECK` (slim Node images have no curl), and
 * `scripts/container-check.sh` runs the very command the Dockerfile names, so the
 * two cannot drift. Run it by hand with `node dist/scripts/healthcheck.js [path]`;
 * the optional path (default `/health/live`) lets an orchestrator probe
 * `/health/ready` with the same script.
 *
 * It reads only `HOST` and `PORT` (the variables the service listens on, see
 * `service/config.ts`); a wildcard `HOST` (`0.0.0.0`, `::`, unset) is probed on
 * 127.0.0.1. Nothing is printed on success; one line on stderr on failure.
 *
 * @module
 */
import { get } from 'node:http'

/** Milliseconds the probe waits for the answer; below the Dockerfile's `--timeout=5s`. */
const PROBE_TIMEOUT_MS = 3000

const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::', '[::]'])

const path = process.argv[2] ?? '/health/live'
const host = WILDCARD_HOSTS.has(process.env.HOST ?? '') ? '127.0.0.1' : (process.env.HOST as string)
const port = Number(process.env.PORT ?? '3000')

/** Reports an unhealthy probe on stderr and sets the failing exit status. */
function unhealthy(reason: string): void {
  process.stderr.write(`healthcheck: GET ${path} on ${host}:${port}: ${reason}\n`)
  process.exitCode = 1
}

const request = get(
  { host, port, path, timeout: PROBE_TIMEOUT_MS, headers: { accept: 'application/json' } },
  (response) => {
    response.resume()
    if (response.statusCode !== 200) unhealthy(`status ${response.statusCode}`)
  },
)
request.on('timeout', () => request.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)))
request.on('error', (error) => unhealthy(error.message))
