/**
 * Configuration, read from the environment once, validated and typed; no other module reads `process.env`.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import envSchema from 'env-schema'
import { settingsSchema } from './settings.js'

type SettingSchemas = (typeof settingsSchema)['properties']

type SettingValue<Schema> = Schema extends { readonly enum: readonly (infer Member)[] }
  ? Member
  : Schema extends { readonly type: 'integer' }
    ? number
    : Schema extends { readonly type: 'boolean' }
      ? boolean
      : string

type Defaulted<With extends boolean> = {
  [Name in keyof SettingSchemas]: SettingSchemas[Name] extends { readonly default: unknown } ? (With extends true ? Name : never) : With extends true ? never : Name
}[keyof SettingSchemas]

/** The environment as {@link settingsSchema} validates it: a setting with a default always has a value. */
type Settings = { [Name in Defaulted<true>]: SettingValue<SettingSchemas[Name]> } & { [Name in Defaulted<false>]?: SettingValue<SettingSchemas[Name]> }

/** Settings that are lists or name files: {@link Config} holds what they mean instead. */
type Interpreted = 'PLANT_STORE_TOKENS' | 'PLANT_STORE_TOKENS_FILE' | 'DATABASE_URL_FILE' | 'TRUST_PROXY' | 'CORS_ORIGINS'

type CamelCase<Name extends string> = Name extends `${infer Word}_${infer Rest}` ? `${Lowercase<Word>}${Capitalize<CamelCase<Rest>>}` : Lowercase<Name>

type CamelCased<T> = { readonly [Name in keyof T as CamelCase<Name & string>]: T[Name] }

/** The validated configuration: every setting under its camel-case name, its lists and files read. */
export type Config = CamelCased<Omit<Settings, Interpreted>> & {
  /** `PLANT_STORE_TOKENS` and the tokens in `PLANT_STORE_TOKENS_FILE`, each once; or one generated. A secret. */
  readonly tokens: readonly string[]
  readonly tokenGenerated: boolean
  readonly trustProxy: boolean | string[]
  readonly corsOrigins: readonly string[]
}

/** A configuration value is missing or invalid; the message says which and why. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

/** RFC 6750 §2.1 `b64token`; 32 random characters carry 128 (hex) to 192 bits (base64url). */
const tokenPattern = /^[A-Za-z0-9\-._~+/]{32,}=*$/

/** Length of a pattern that marks a token as made by hand: odds below 2^-30 in 32 random characters. */
const PATTERN_LENGTH = 8

/** Whether `PATTERN_LENGTH` characters in a row keep one step (`aaaaaaaa`, `abcdefgh`, `76543210`), or appear twice. */
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
  for (let index = 2; index < window.length; index++) if (window.charCodeAt(index) - window.charCodeAt(index - 1) !== step) return false
  return true
}

function isStrongToken(token: string): boolean {
  return tokenPattern.test(token) && new Set(token).size >= 8 && !hasPattern(token)
}

/** Headroom below the open-file limit for what is not a client connection: store files, logs, the database pool. */
const RESERVED_FILES = 128

/** Default cap on client connections: at about 14 KB each when idle, 140 MB, well inside a 512 MB container. */
const DEFAULT_MAX_CONNECTIONS = 10_000

/**
 * Reads and validates the configuration; without a token, a development or test start generates one.
 * @throws {ConfigError} naming the variable, never a secret: invalid or unreadable, a weak token, or production without one.
 */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  let settings: Settings
  try {
    // A copy of `env` (not process.env, no .env file), defaults filled, text read as numbers and
    // booleans, other variables dropped; every error named as Ajv words it: `env/PORT must be <= 65535, …`.
    settings = envSchema<Settings>({ schema: settingsSchema, data: env, env: false, dotenv: false })
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${(error as Error).message}`, { cause: error })
  }
  const { PLANT_STORE_TOKENS, PLANT_STORE_TOKENS_FILE, DATABASE_URL_FILE, TRUST_PROXY, CORS_ORIGINS, ...plain } = settings
  const tokens = [...splitList(PLANT_STORE_TOKENS), ...readTokenFile(PLANT_STORE_TOKENS_FILE)]
  for (const [index, token] of tokens.entries()) {
    if (!isStrongToken(token)) {
      // The token itself is never echoed: it is a secret.
      throw new ConfigError(
        `Invalid configuration: token #${index + 1} is malformed or guessable; a token must be at least 32 characters of ` +
          'A-Z a-z 0-9 - . _ ~ + / (RFC 6750 §2.1), at least 8 of them different, with no 8 in a row that repeat or count ' +
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
      throw new ConfigError('Refusing to start: NODE_ENV=production and no bearer token is configured; set PLANT_STORE_TOKENS or PLANT_STORE_TOKENS_FILE')
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
    maxConnections: plain.MAX_CONNECTIONS === 0 ? Math.max(1, Math.min(DEFAULT_MAX_CONNECTIONS, openFileLimit() - RESERVED_FILES)) : plain.MAX_CONNECTIONS,
  }
}

/** The soft open-file limit (RLIMIT_NOFILE) from `/proc/self/limits`; 1024 where unreadable. */
export function openFileLimit(): number {
  try {
    return Number(/^Max open files\s+(\d+)\s/m.exec(readFileSync('/proc/self/limits', 'utf8'))![1])
    /* c8 ignore start -- every Linux has the line */
  } catch {
    return 1024
  }
  /* c8 ignore stop */
}

function camelCased<T extends object>(settings: T): CamelCased<T> {
  const named = Object.entries(settings).map(([name, value]) => [name.toLowerCase().replace(/_(.)/g, (_, letter: string) => letter.toUpperCase()), value])
  return Object.fromEntries(named) as CamelCased<T>
}

/**
 * `TRUST_PROXY`: `true`/`false`, or addresses and CIDRs. A hop count is refused (Fastify 5
 * fails closed on it), and so is trusting every hop in production: any client could then
 * choose its own address, and with it its rate-limit budget and log lines.
 */
function parseTrustProxy(value: string, nodeEnv: Settings['NODE_ENV']): Config['trustProxy'] {
  const list = value === 'true' || value === 'false' ? [] : splitList(value)
  if (value !== 'true' && value !== 'false' && (list.length === 0 || !list.every(isAddressOrCidr))) {
    throw new ConfigError('Invalid configuration: TRUST_PROXY must be true, false, or comma-separated IP addresses/CIDRs')
  }
  if (nodeEnv === 'production' && (value === 'true' || list.some((entry) => entry.endsWith('/0')))) {
    throw new ConfigError(
      'Refusing to start: TRUST_PROXY trusts every address in production, so any client could choose the address it is ' +
        "limited and logged by; name the gateway's addresses instead",
    )
  }
  return value === 'true' || value === 'false' ? value === 'true' : list
}

/** An IP address (`isIP`), optionally with a prefix of at most 32 or 128 bits (RFC 4632, RFC 4291 §2.3). */
function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, ...more] = entry.split('/')
  const version = isIP(address)
  if (version === 0 || more.length > 0) return false
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128))
}

function splitList(text: string): string[] {
  return text.split(/[\s,]+/).filter((item) => item !== '')
}

function readTokenFile(path: string | undefined): string[] {
  return path === undefined ? [] : splitList(readSecretFile('PLANT_STORE_TOKENS_FILE', path))
}

/** `DATABASE_URL_FILE`'s content when it is set (held to `DATABASE_URL`'s pattern), else `DATABASE_URL`. */
function readDatabaseUrl(url: string | undefined, path: string | undefined): string | undefined {
  if (path === undefined) return url
  const fromFile = readSecretFile('DATABASE_URL_FILE', path).trim()
  if (!new RegExp(settingsSchema.properties.DATABASE_URL.pattern!).test(fromFile)) {
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
