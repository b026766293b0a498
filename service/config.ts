/** Configuration, read from the environment once, validated and typed; no other module reads `process.env`. @module */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import envSchema from 'env-schema'
import { asError, errorCode } from './errors.ts'
import { settingsSchema } from './settings.ts'

type SettingSchemas = (typeof settingsSchema)['properties']

type SettingValue<Schema> = Schema extends { readonly enum: readonly (infer Member)[] }
  ? Member
  : Schema extends { readonly type: 'integer' }
    ? number
    : Schema extends { readonly type: 'boolean' }
      ? boolean
      : string

type Defaulted<With extends boolean> = {
  [Name in keyof SettingSchemas]: SettingSchemas[Name] extends { readonly default: unknown }
    ? With extends true
      ? Name
      : never
    : With extends true
      ? never
      : Name
}[keyof SettingSchemas]

type Settings = { [Name in Defaulted<true>]: SettingValue<SettingSchemas[Name]> } & {
  [Name in Defaulted<false>]?: SettingValue<SettingSchemas[Name]>
}

/** Lists and file names: {@link Config} holds what they mean instead. */
type Interpreted =
  'PLANT_STORE_TOKENS' | 'PLANT_STORE_TOKENS_FILE' | 'DATABASE_URL_FILE' | 'TRUST_PROXY' | 'CORS_ORIGINS'

type CamelCase<Name extends string> = Name extends `${infer Word}_${infer Rest}`
  ? `${Lowercase<Word>}${Capitalize<CamelCase<Rest>>}`
  : Lowercase<Name>

type CamelCased<T> = { readonly [Name in keyof T as CamelCase<Name & string>]: T[Name] }

/** The service's settings, read once at start from the environment; docs/configuration.md names each. */
export type Config = CamelCased<Omit<Settings, Interpreted>> & {
  /** A secret. */
  readonly tokens: readonly string[]
  /** No `PLANT_STORE_TOKENS` was set outside production: the one token was generated for this run. */
  readonly tokenGenerated: boolean
  readonly trustProxy: boolean | string[]
  readonly corsOrigins: readonly string[]
}

/** A setting the service cannot start with; its message names the variable, never a secret. The server exits 1. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

/** RFC 6750 §2.1 `b64token`; 32 random characters carry 128 to 192 bits. */
const tokenPattern = /^[A-Za-z0-9\-._~+/]{32,}=*$/

/** Odds below 2^-30 in 32 random characters, so a pattern marks a token made by hand. */
const PATTERN_LENGTH = 8

/** A run that keeps one step (`aaaaaaaa`, `abcdefgh`, `76543210`), or appears twice. */
function hasPattern(token: string): boolean {
  const seen = new Set<string>()
  for (let index = 0; index + PATTERN_LENGTH <= token.length; index++) {
    const window = token.slice(index, index + PATTERN_LENGTH)
    if (seen.has(window) || keepsStep(window)) return true
    seen.add(window)
  }
  return false
}

function keepsStep(window: string): boolean {
  const step = window.charCodeAt(1) - window.charCodeAt(0)
  if (Math.abs(step) > 1) return false
  for (let index = 2; index < window.length; index++)
    if (window.charCodeAt(index) - window.charCodeAt(index - 1) !== step) return false
  return true
}

function isStrongToken(token: string): boolean {
  return tokenPattern.test(token) && new Set(token).size >= 8 && !hasPattern(token)
}

/** Files for store, logs and the database pool, below the open-file limit. */
const RESERVED_FILES = 128

/** Fits a 512 MB container. */
const DEFAULT_MAX_CONNECTIONS = 10_000

/** Outside production a token is generated if none is set. @throws {ConfigError} naming the variable, not a secret. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  let settings: Settings
  try {
    settings = envSchema<Settings>({ schema: settingsSchema, data: env, env: false, dotenv: false })
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${asError(error).message}`, { cause: error })
  }
  const { PLANT_STORE_TOKENS, PLANT_STORE_TOKENS_FILE, DATABASE_URL_FILE, TRUST_PROXY, CORS_ORIGINS, ...plain } =
    settings
  const tokens = [...splitList(PLANT_STORE_TOKENS), ...readTokenFile(PLANT_STORE_TOKENS_FILE)]
  for (const [index, token] of tokens.entries()) {
    if (!isStrongToken(token)) {
      throw new ConfigError(
        `Invalid configuration: token #${index + 1} is malformed or guessable; ` +
          'a token must be at least 32 characters of A-Z a-z 0-9 - . _ ~ + / (RFC 6750 §2.1), ' +
          'at least 8 of them different, with no 8 in a row that repeat or count ' +
          '(`aaaaaaaa`, `abcdefgh`, `76543210`) and no 8 that appear twice, so that it carries 128 bits or more: ' +
          'generate one with `openssl rand -base64 32`',
      )
    }
  }
  if (plain.SHUTDOWN_DRAIN_DELAY_MS > 0 && plain.SHUTDOWN_DRAIN_DELAY_MS >= plain.SHUTDOWN_GRACE_MS) {
    throw new ConfigError('Invalid configuration: SHUTDOWN_DRAIN_DELAY_MS must be shorter than SHUTDOWN_GRACE_MS')
  }
  let tokenGenerated = false
  if (tokens.length === 0) {
    if (plain.NODE_ENV === 'production') {
      throw new ConfigError(
        'Refusing to start: NODE_ENV=production and no bearer token is configured; ' +
          'set PLANT_STORE_TOKENS or PLANT_STORE_TOKENS_FILE',
      )
    }
    tokens.push(randomBytes(32).toString('base64url'))
    tokenGenerated = true
  }
  return {
    ...camelCased(plain),
    databaseUrl: readDatabaseUrl(plain.DATABASE_URL, DATABASE_URL_FILE),
    tokens: [...new Set(tokens)],
    tokenGenerated,
    trustProxy: parseTrustProxy(TRUST_PROXY, plain.NODE_ENV),
    corsOrigins: splitList(CORS_ORIGINS),
    maxConnections:
      plain.MAX_CONNECTIONS === 0
        ? Math.max(1, Math.min(DEFAULT_MAX_CONNECTIONS, openFileLimit() - RESERVED_FILES))
        : plain.MAX_CONNECTIONS,
  }
}

/** The soft RLIMIT_NOFILE; 1024 where unreadable. */
export function openFileLimit(): number {
  const limit = /^Max open files\s+(\d+)\s/m.exec(processLimits())?.[1]
  /* c8 ignore next -- every Linux has the line */
  return limit === undefined ? 1024 : Number(limit)
}

function processLimits(): string {
  try {
    return readFileSync('/proc/self/limits', 'utf8')
    /* c8 ignore start -- every Linux has the file */
  } catch {
    return ''
  }
  /* c8 ignore stop */
}

function camelCased<T extends object>(settings: T): CamelCased<T> {
  const named = Object.entries(settings).map(([name, value]) => [
    name.toLowerCase().replace(/_(.)/g, (_, letter: string) => letter.toUpperCase()),
    value,
  ])
  return Object.fromEntries(named) as CamelCased<T>
}

/**
 * Refuses a hop count (Fastify 5 fails closed on it), a prefix of 0 (@fastify/proxy-addr refuses it; `true` says so)
 * and, in production, trusting every hop.
 */
function parseTrustProxy(value: string, nodeEnv: Settings['NODE_ENV']): Config['trustProxy'] {
  const list = value === 'true' || value === 'false' ? [] : splitList(value)
  if (value !== 'true' && value !== 'false' && (list.length === 0 || !list.every(isAddressOrCidr))) {
    throw new ConfigError(
      'Invalid configuration: TRUST_PROXY must be true, false, or comma-separated IP addresses/CIDRs',
    )
  }
  if (nodeEnv === 'production' && value === 'true') {
    throw new ConfigError(
      'Refusing to start: TRUST_PROXY trusts every address in production, so any client could choose the address it ' +
        "is limited and logged by; name the gateway's addresses instead",
    )
  }
  return value === 'true' || value === 'false' ? value === 'true' : list
}

/** An address, or a CIDR with a prefix of 1 to 32 or 128 bits (RFC 4632, RFC 4291 §2.3). */
function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, ...more] = entry.split('/')
  const version = isIP(address)
  if (version === 0 || more.length > 0) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (version === 4 ? 32 : 128)
}

function splitList(text: string): string[] {
  return text.split(/[\s,]+/).filter((item) => item !== '')
}

function readTokenFile(path: string | undefined): string[] {
  return path === undefined ? [] : splitList(readSecretFile('PLANT_STORE_TOKENS_FILE', path))
}

function readDatabaseUrl(url: string | undefined, path: string | undefined): string | undefined {
  if (path === undefined) return url
  const fromFile = readSecretFile('DATABASE_URL_FILE', path).trim()
  if (!new RegExp(settingsSchema.properties.DATABASE_URL.pattern).test(fromFile)) {
    throw new ConfigError('Invalid configuration: DATABASE_URL_FILE must contain a postgres:// URL')
  }
  return fromFile
}

/** The error names the variable, never the content. */
function readSecretFile(variable: string, path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${variable} cannot be read (${String(errorCode(error))})`)
  }
}
