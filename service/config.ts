/**
 * Configuration of the service: read from the environment once, validated, typed,
 * and passed down. No other module reads `process.env`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { envSchema } from 'env-schema'

/** The environment variables the service reads, as a JSON Schema for env-schema. */
const environmentSchema = {
  type: 'object',
  properties: {
    NODE_ENV: { type: 'string', enum: ['development', 'production', 'test'], default: 'development' },
    HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    DATA_DIR: { type: 'string', minLength: 1, default: 'data' },
    PLANT_STORE_TOKENS: { type: 'string', default: '' },
    PLANT_STORE_TOKENS_FILE: { type: 'string', minLength: 1 },
    BODY_LIMIT: { type: 'integer', minimum: 256, maximum: 16777216, default: 65536 },
    LOG_LEVEL: {
      type: 'string',
      enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
    },
    SHUTDOWN_GRACE_MS: { type: 'integer', minimum: 0, maximum: 600000, default: 10000 },
    SHUTDOWN_DRAIN_DELAY_MS: { type: 'integer', minimum: 0, maximum: 600000, default: 0 },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    DATABASE_URL_FILE: { type: 'string', minLength: 1 },
    DATABASE_POOL_SIZE: { type: 'integer', minimum: 1, maximum: 1000, default: 10 },
    DATABASE_STATEMENT_TIMEOUT_MS: { type: 'integer', minimum: 1, maximum: 3600000, default: 5000 },
    DATABASE_CONNECT_TIMEOUT_MS: { type: 'integer', minimum: 1, maximum: 600000, default: 2000 },
    MIGRATE_ON_START: { type: 'boolean', default: true },
    GROUP_COMMIT_MAX_BATCH: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
    TRUST_PROXY: { type: 'string', default: 'false' },
    RATE_LIMIT_MAX: { type: 'integer', minimum: 0, default: 6000 },
    RATE_LIMIT_WINDOW_MS: { type: 'integer', minimum: 1000, maximum: 86400000, default: 60000 },
    RATE_LIMIT_REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    AUTH_FAILURE_LIMIT_MAX: { type: 'integer', minimum: 0, default: 20 },
    AUTH_FAILURE_LIMIT_WINDOW_MS: { type: 'integer', minimum: 1000, maximum: 86400000, default: 60000 },
    LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: { type: 'integer', minimum: 0, default: 1000 },
    LOAD_SHED_MAX_HEAP_BYTES: { type: 'integer', minimum: 0, default: 0 },
    CORS_ORIGINS: { type: 'string', default: '' },
    KEEP_ALIVE_TIMEOUT_MS: { type: 'integer', minimum: 1, maximum: 3600000, default: 72000 },
    REQUEST_TIMEOUT_MS: { type: 'integer', minimum: 0, maximum: 3600000, default: 30000 },
    HEADERS_TIMEOUT_MS: { type: 'integer', minimum: 1, maximum: 3600000, default: 10000 },
    CONNECTION_TIMEOUT_MS: { type: 'integer', minimum: 0, maximum: 3600000, default: 0 },
  },
} as const

/** Typed, validated configuration of one service process. */
export interface Config {
  /** `NODE_ENV`: `production` refuses to start without configured tokens. */
  readonly environment: 'development' | 'production' | 'test'
  /** `HOST`: interface to listen on. */
  readonly host: string
  /** `PORT`: TCP port to listen on; 0 picks a free one. */
  readonly port: number
  /** `DATA_DIR`: directory of the embedded store. */
  readonly dataDir: string
  /** Accepted bearer tokens (several, for rotation). */
  readonly tokens: readonly string[]
  /** True when no token was configured and one was generated for this development run. */
  readonly tokenGenerated: boolean
  /** `BODY_LIMIT`: largest accepted request body, in bytes; larger is 413. */
  readonly bodyLimit: number
  /** `LOG_LEVEL`: pino level. */
  readonly logLevel: string
  /** `SHUTDOWN_GRACE_MS`: milliseconds in-flight requests get after SIGTERM/SIGINT. */
  readonly shutdownGraceMs: number
  /**
   * `SHUTDOWN_DRAIN_DELAY_MS`: after SIGTERM, milliseconds of readiness 503 while still
   * serving, before the listener closes (for gateways that poll readiness); part of the grace period.
   */
  readonly shutdownDrainDelayMs: number
  /** `DATABASE_URL` (or the file `DATABASE_URL_FILE` names): PostgreSQL instead of the embedded store. A secret. */
  readonly databaseUrl: string | undefined
  /** `DATABASE_POOL_SIZE`: most PostgreSQL connections per process. */
  readonly poolSize: number
  /** `DATABASE_STATEMENT_TIMEOUT_MS`: milliseconds before PostgreSQL cancels a statement. */
  readonly statementTimeoutMs: number
  /** `DATABASE_CONNECT_TIMEOUT_MS`: milliseconds to wait for a PostgreSQL connection; then 503. */
  readonly connectTimeoutMs: number
  /** `MIGRATE_ON_START`: apply pending migrations at start-up (else `npm run migrate` does). */
  readonly migrateOnStart: boolean
  /** `GROUP_COMMIT_MAX_BATCH`: most creates written in one transaction (1 turns group commit off). */
  readonly groupCommitMaxBatch: number
  /**
   * `TRUST_PROXY`: whether `X-Forwarded-*` is believed: `false` (default), `true`
   * (any peer), or comma-separated addresses/CIDRs of the gateways (Fastify
   * `trustProxy`). A hop count is refused: Fastify 5 fails closed on it.
   */
  readonly trustProxy: boolean | string[]
  /** `RATE_LIMIT_MAX`: requests per window per bearer token; 0 turns rate limiting off. */
  readonly rateLimitMax: number
  /** `RATE_LIMIT_WINDOW_MS`: length of the rate-limit window, in milliseconds. */
  readonly rateLimitWindowMs: number
  /** `RATE_LIMIT_REDIS_URL`: Redis shared by replicas for one budget per token; unset, per process. A secret. */
  readonly rateLimitRedisUrl: string | undefined
  /**
   * `AUTH_FAILURE_LIMIT_MAX`: failed authentications per window per client address
   * (`request.ip`, see `TRUST_PROXY`); past it, failures are 429. 0 off.
   */
  readonly authFailureLimitMax: number
  /** `AUTH_FAILURE_LIMIT_WINDOW_MS`: length of the failed-authentication window, in milliseconds. */
  readonly authFailureLimitWindowMs: number
  /** `LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS`: mean event-loop delay above which requests get 503; 0 off. */
  readonly loadShedMaxEventLoopDelayMs: number
  /** `LOAD_SHED_MAX_HEAP_BYTES`: heap use above which requests get 503; 0 off. */
  readonly loadShedMaxHeapBytes: number
  /** `CORS_ORIGINS`: comma-separated origins allowed by CORS; empty (default) sends no CORS headers. */
  readonly corsOrigins: readonly string[]
  /** `KEEP_ALIVE_TIMEOUT_MS`: idle keep-alive connection lifetime; keep above the gateway's. */
  readonly keepAliveTimeoutMs: number
  /** `REQUEST_TIMEOUT_MS`: most time to receive a whole request; 0 off. */
  readonly requestTimeoutMs: number
  /** `HEADERS_TIMEOUT_MS`: most time to receive the request headers. */
  readonly headersTimeoutMs: number
  /** `CONNECTION_TIMEOUT_MS`: socket inactivity timeout; 0 off. */
  readonly connectionTimeoutMs: number
}

/** A configuration value is missing or invalid; the message says which and why. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

/**
 * Token syntax of RFC 6750 §2.1 (`b64token`), so every configured token can be sent.
 * At least 16 characters, so that a placeholder such as "secret" is not accepted.
 */
const tokenPattern = /^[A-Za-z0-9\-._~+/]{16,}=*$/

/**
 * Reads and validates the configuration.
 *
 * Tokens come from `PLANT_STORE_TOKENS` (comma-separated) and from the file named by
 * `PLANT_STORE_TOKENS_FILE` (container secrets; tokens separated by commas or
 * white space); both may be used at once. With none configured, a development or
 * test start generates one random token; a production start refuses.
 *
 * @param env - the process environment, e.g. `process.env`.
 * @returns the typed configuration.
 * @throws {ConfigError} when a variable is invalid, a token file cannot be read, a
 *   token is malformed, or `NODE_ENV=production` has no token.
 */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  let raw
  try {
    raw = envSchema<Record<string, unknown>>({ schema: environmentSchema, data: env, env: false })
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${(error as Error).message}`)
  }
  const environment = raw.NODE_ENV as Config['environment']
  const tokens = [...splitList(raw.PLANT_STORE_TOKENS as string), ...readTokenFile(raw.PLANT_STORE_TOKENS_FILE as string | undefined)]
  for (const [index, token] of tokens.entries()) {
    if (!tokenPattern.test(token)) {
      // The token itself is never echoed: it is a secret.
      throw new ConfigError(
        `Invalid configuration: token #${index + 1} must be at least 16 characters of A-Z a-z 0-9 - . _ ~ + / (RFC 6750 §2.1)`,
      )
    }
  }
  if ((raw.SHUTDOWN_DRAIN_DELAY_MS as number) > 0 && (raw.SHUTDOWN_DRAIN_DELAY_MS as number) >= (raw.SHUTDOWN_GRACE_MS as number)) {
    throw new ConfigError('Invalid configuration: SHUTDOWN_DRAIN_DELAY_MS must be shorter than SHUTDOWN_GRACE_MS')
  }
  let tokenGenerated = false
  if (tokens.length === 0) {
    if (environment === 'production') {
      throw new ConfigError(
        'Refusing to start: NODE_ENV=production and no bearer token is configured; set PLANT_STORE_TOKENS or PLANT_STORE_TOKENS_FILE',
      )
    }
    tokens.push(randomBytes(32).toString('base64url'))
    tokenGenerated = true
  }
  return {
    environment,
    host: raw.HOST as string,
    port: raw.PORT as number,
    dataDir: raw.DATA_DIR as string,
    tokens: [...new Set(tokens)],
    tokenGenerated,
    bodyLimit: raw.BODY_LIMIT as number,
    logLevel: raw.LOG_LEVEL as string,
    shutdownGraceMs: raw.SHUTDOWN_GRACE_MS as number,
    shutdownDrainDelayMs: raw.SHUTDOWN_DRAIN_DELAY_MS as number,
    databaseUrl: readDatabaseUrl(raw.DATABASE_URL as string | undefined, raw.DATABASE_URL_FILE as string | undefined),
    poolSize: raw.DATABASE_POOL_SIZE as number,
    statementTimeoutMs: raw.DATABASE_STATEMENT_TIMEOUT_MS as number,
    connectTimeoutMs: raw.DATABASE_CONNECT_TIMEOUT_MS as number,
    migrateOnStart: raw.MIGRATE_ON_START as boolean,
    groupCommitMaxBatch: raw.GROUP_COMMIT_MAX_BATCH as number,
    trustProxy: parseTrustProxy(raw.TRUST_PROXY as string),
    rateLimitMax: raw.RATE_LIMIT_MAX as number,
    rateLimitWindowMs: raw.RATE_LIMIT_WINDOW_MS as number,
    rateLimitRedisUrl: raw.RATE_LIMIT_REDIS_URL as string | undefined,
    authFailureLimitMax: raw.AUTH_FAILURE_LIMIT_MAX as number,
    authFailureLimitWindowMs: raw.AUTH_FAILURE_LIMIT_WINDOW_MS as number,
    loadShedMaxEventLoopDelayMs: raw.LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS as number,
    loadShedMaxHeapBytes: raw.LOAD_SHED_MAX_HEAP_BYTES as number,
    corsOrigins: splitList(raw.CORS_ORIGINS as string),
    keepAliveTimeoutMs: raw.KEEP_ALIVE_TIMEOUT_MS as number,
    requestTimeoutMs: raw.REQUEST_TIMEOUT_MS as number,
    headersTimeoutMs: raw.HEADERS_TIMEOUT_MS as number,
    connectionTimeoutMs: raw.CONNECTION_TIMEOUT_MS as number,
  }
}

/** An IPv4 or IPv6 address, with an optional prefix length (CIDR). */
const ipOrCidr = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F]{0,4}(:[0-9a-fA-F]{0,4}){2,7})(\/\d{1,3})?$/

/** `TRUST_PROXY`: `true`/`false`, or a list of addresses and CIDRs. */
function parseTrustProxy(value: string): Config['trustProxy'] {
  if (value === 'true' || value === 'false') return value === 'true'
  const list = splitList(value)
  if (list.length === 0 || !list.every((entry) => ipOrCidr.test(entry))) {
    throw new ConfigError('Invalid configuration: TRUST_PROXY must be true, false, or comma-separated IP addresses/CIDRs')
  }
  return list
}

/** Items of a comma- or white-space-separated list, empty ones dropped. */
function splitList(text: string): string[] {
  return text.split(/[\s,]+/).filter((item) => item !== '')
}

function readTokenFile(path: string | undefined): string[] {
  return path === undefined ? [] : splitList(readSecretFile('PLANT_STORE_TOKENS_FILE', path))
}

function readDatabaseUrl(url: string | undefined, path: string | undefined): string | undefined {
  if (path === undefined) return url
  const fromFile = readSecretFile('DATABASE_URL_FILE', path).trim()
  if (!/^postgres(ql)?:\/\//.test(fromFile)) {
    throw new ConfigError('Invalid configuration: DATABASE_URL_FILE must contain a postgres:// URL')
  }
  return fromFile
}

/** Reads a secret file (container secrets); the error names the variable, never the content. */
function readSecretFile(variable: string, path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${variable} cannot be read (${(error as NodeJS.ErrnoException).code})`)
  }
}
