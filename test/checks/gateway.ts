/**
 * `npm run check:gateway`: deploy/nginx/nginx.conf keeps bodies up to BODY_LIMIT in memory and refuses larger ones,
 * gives up on headers no later than the service, drops idle upstream connections first. Exits 1 otherwise.
 */
import { readFileSync } from 'node:fs'
import { settingsSchema } from '../../service/settings.ts'

const conf = readFileSync(new URL('../../deploy/nginx/nginx.conf', import.meta.url), 'utf8')
const { BODY_LIMIT, HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS } = settingsSchema.properties
const bodyLimit = Number(BODY_LIMIT.default)
const headersTimeoutMs = Number(HEADERS_TIMEOUT_MS.default)
const keepAliveTimeoutMs = Number(KEEP_ALIVE_TIMEOUT_MS.default)

/** The first directive `name` (after `before`) in bytes or milliseconds (`64k`, `10s`). */
function value(name: string, before = '') {
  const pattern = new RegExp(`${before}\\n\\s*${name}\\s+(\\d+)([kms]?)\\s*;`)
  const [, number, unit] = pattern.exec(conf) ?? []
  if (number === undefined) throw new Error(`deploy/nginx/nginx.conf has no ${pattern}`)
  return Number(number) * { k: 1024, m: 1024 * 1024, s: 1000, '': 1 }[unit as 'k' | 'm' | 's' | '']
}

const maxBody = value('client_max_body_size')
const bodyBuffer = value('client_body_buffer_size')
const headerTimeout = value('client_header_timeout')
const idle = value('keepalive_timeout', 'upstream plant_store \\{[^}]*?')
const problems = [
  maxBody === bodyLimit ? '' : `client_max_body_size is ${maxBody} bytes, BODY_LIMIT ${bodyLimit}`,
  bodyBuffer >= bodyLimit
    ? ''
    : `client_body_buffer_size (${bodyBuffer} bytes) is less than BODY_LIMIT (${bodyLimit}): bodies go to disk`,
  headerTimeout <= headersTimeoutMs
    ? ''
    : `client_header_timeout (${headerTimeout} ms) is longer than HEADERS_TIMEOUT_MS (${headersTimeoutMs} ms)`,
  idle < keepAliveTimeoutMs
    ? ''
    : `the upstream keepalive_timeout (${idle} ms) ` +
      `is not shorter than KEEP_ALIVE_TIMEOUT_MS (${keepAliveTimeoutMs} ms)`,
].filter(Boolean)
for (const problem of problems) console.error(`deploy/nginx/nginx.conf: ${problem}`)
console.log(
  problems.length === 0
    ? "the example gateway's limits line up with the service's defaults"
    : `${problems.length} limits of the gateway out of line`,
)
process.exitCode = problems.length === 0 ? 0 : 1
