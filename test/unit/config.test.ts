/**
 * `loadConfig`: defaults, tokens (weak ones refused, never echoed), unsafe production refused, invalid variables named;
 * docs/configuration.md's table.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import {
  referencePath,
  settingsTable,
  TABLE_END,
  TABLE_START,
  withSettingsTable,
} from '../../scripts/config-reference.ts'
import { ConfigError, loadConfig, openFileLimit } from '../../service/config.ts'
import { type SettingSchema, settingsSchema } from '../../service/settings.ts'

const A = 'token-a-Xq7mR2vL9pW4zK8sT3nB6cJ1hF5gD0y'
const B = 'token-b-Hn4tQ8wE2rY6uI0oP3aS7dF1gJ5kL9z'
const C = 'token-c-Vb3nM7qW1eR5tY9uI2oP6aS0dF4gH8j'

/** The message of the ConfigError `loadConfig(env)` throws. */
function refusal(env: NodeJS.ProcessEnv) {
  try {
    loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) return error.message
    throw error
  }
  throw new Error('loadConfig did not throw')
}

const camel = (name: string) => name.toLowerCase().replace(/_(.)/g, (_, letter: string) => letter.toUpperCase())

/** Settings parsed further, tested below. */
const parsed = /^(PLANT_STORE_TOKENS|DATABASE_URL|TRUST_PROXY|CORS_ORIGINS|MAX_CONNECTIONS)/

t.test("each setting's default is the schema's", async (t) => {
  const config: Record<string, unknown> = { ...loadConfig({}) }
  for (const [name, setting] of Object.entries(settingsSchema.properties))
    if (!parsed.test(name)) t.equal(config[camel(name)], 'default' in setting ? setting.default : undefined, name)
  t.strictSame(config.corsOrigins, [])
})

t.test('each setting is read and typed, the environment unchanged', async (t) => {
  for (const [name, setting] of Object.entries(settingsSchema.properties) as Array<[string, SettingSchema]>) {
    if (parsed.test(name) || setting.pattern !== undefined) continue
    const other = { integer: (setting.minimum ?? 0) + 1, boolean: !setting.default, string: 'x' }[setting.type]
    const value = setting.enum?.at(-1) ?? other
    const env = Object.freeze({ [name]: String(value), PLANT_STORE_TOKENS: A })
    t.equal(({ ...loadConfig(env) } as Record<string, unknown>)[camel(name)], value, `${name}=${value}`)
  }
  const [redis, otlp] = ['redis://cache:6379', 'http://collector:4318']
  const env = {
    RATE_LIMIT_REDIS_URL: redis,
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    CORS_ORIGINS: 'https://a.x, https://b.x',
  }
  t.match(loadConfig(Object.freeze(env)), {
    rateLimitRedisUrl: redis,
    otelExporterOtlpEndpoint: otlp,
    corsOrigins: ['https://a.x', 'https://b.x'],
  })
})

t.test(
  'tokens: PLANT_STORE_TOKENS and PLANT_STORE_TOKENS_FILE (newlines or commas) combine, trimmed, each once',
  async (t) => {
    const dir = t.testdir({ tokens: `${B}\n${A},${C}\n\n` })
    t.strictSame(loadConfig({ PLANT_STORE_TOKENS: ` ${A} , ${C},,${A} ` }).tokens, [A, C])
    t.match(loadConfig({ PLANT_STORE_TOKENS: `${A},${C}`, PLANT_STORE_TOKENS_FILE: join(dir, 'tokens') }), {
      tokens: [A, C, B],
      tokenGenerated: false,
    })
    for (const path of [join(dir, 'missing'), dir])
      t.match(refusal({ PLANT_STORE_TOKENS_FILE: path }), /PLANT_STORE_TOKENS_FILE cannot be read/)
    const random = (bytes: number, encoding: BufferEncoding) => randomBytes(bytes).toString(encoding)
    for (const token of [random(24, 'base64url'), random(32, 'base64'), random(16, 'hex')])
      t.strictSame(loadConfig({ PLANT_STORE_TOKENS: token }).tokens, [token], 'a random token of 32 characters')
  },
)

t.test('a weak or malformed token is a ConfigError that does not echo it', async (t) => {
  for (const [what = '', token = ''] of [
    ['too short', 'short-token'],
    ['of 31 characters', 'k3J9xQ2mV7pL0wR5tY8uZ1aB4cD6eF9'],
    ['outside RFC 6750 b64token', 'token-with-a-quote-"-0123456789abcdefghijkl'],
    ['with a semicolon', 'token;0123456789abcdefghijklmnopqrstuvwxyz'],
    ['of one character', 'a'.repeat(40)],
    ['with one character 8 times in a row', `k3J9xQ2mV7pL${'0'.repeat(8)}wR5tY8uZ1aB4cD6`],
    ['of fewer than 8 different characters', 'abcdefg'.repeat(6)],
    ['counting up', `k3J9xQ2mV7pL${'abcdefgh'}wR5tY8uZ1aB4cD6`],
    ['counting down', `k3J9xQ2mV7pL${'76543210'}wR5tY8uZ1aB4cD6`],
    ['of a pattern repeated', 'abcdefgh'.repeat(4)],
    ['of 16 characters twice', '0123456789abcdef'.repeat(2)],
    ['with 8 random characters twice', `k3J9xQ2mV7pLwR5tY8uZ${'Hn4tQ8wE'.repeat(2)}`],
  ]) {
    const message = refusal({ PLANT_STORE_TOKENS: `${A},${token}` })
    t.match(
      message,
      /token #2 is malformed or guessable; a token must be at least 32 characters .* 128 bits or more/,
      what,
    )
    const file = join(t.testdir({ tokens: `${token}\n` }), 'tokens')
    t.notMatch(message + refusal({ PLANT_STORE_TOKENS_FILE: file }), token)
  }
})

t.test('production without a token refuses to start; development and test generate one per call', async (t) => {
  for (const env of [{ NODE_ENV: 'production' }, { NODE_ENV: 'production', PLANT_STORE_TOKENS: ' , ' }])
    t.match(refusal(env), /^Refusing to start/)
  for (const environment of ['development', 'test']) {
    const first = loadConfig({ NODE_ENV: environment })
    t.equal(first.tokenGenerated, true)
    t.match(first.tokens, [/^[A-Za-z0-9_-]{43}$/], '32 random bytes, base64url')
    t.notSame(first.tokens, loadConfig({ NODE_ENV: environment }).tokens, 'another each call')
    t.strictSame(loadConfig({ NODE_ENV: environment, PLANT_STORE_TOKENS: A }).tokens, [A], 'none if one is set')
  }
})

t.test('invalid variables are each named with what is wrong, as Ajv words it', async (t) => {
  t.equal(
    refusal({ PORT: '70000', LOG_LEVEL: 'loud' }),
    'Invalid configuration: env/PORT must be <= 65535, env/LOG_LEVEL must be equal to one of the allowed values',
  )
  const invalid =
    'PORT=http BODY_LIMIT=100 BODY_LIMIT=999999999 NODE_ENV=staging SHUTDOWN_GRACE_MS=soon HOST= ' +
    'RATE_LIMIT_MAX=mysql://nope RATE_LIMIT_REDIS_URL=mysql://nope AUTH_FAILURE_LIMIT_MAX=2.5 ' +
    'AUTH_FAILURE_LIMIT_WINDOW_MS=999 AUTH_FAILURE_LIMIT_WINDOW_MS=86400001 OTEL_EXPORTER_OTLP_ENDPOINT=collector:4317'
  for (const setting of invalid.split(' ')) {
    const [variable = '', value] = setting.split('=')
    const message = refusal({ [variable]: value, PLANT_STORE_TOKENS: A })
    t.match(message, new RegExp(`^Invalid configuration: .*\\b${variable}\\b`), setting)
  }
  t.match(
    refusal({ SHUTDOWN_DRAIN_DELAY_MS: '5000', SHUTDOWN_GRACE_MS: '5000' }),
    /SHUTDOWN_DRAIN_DELAY_MS must be shorter than SHUTDOWN_GRACE_MS/,
  )
})

t.test(
  'DATABASE_URL and DATABASE_URL_FILE (trimmed) select PostgreSQL; a wrong one is a ConfigError not echoing it',
  async (t) => {
    const [url, other, wrong] = ['postgres://p:secret@db:5432/p', 'postgresql://p:secret@db/p', 'mysql://p:secret@db/p']
    t.equal(loadConfig({ DATABASE_URL: url }).databaseUrl, url)
    const dir = t.testdir({ url: `${other}\n`, wrong: `${wrong}\n` })
    t.equal(loadConfig({ DATABASE_URL_FILE: join(dir, 'url') }).databaseUrl, other)
    const errors = [refusal({ DATABASE_URL: wrong }), refusal({ DATABASE_URL_FILE: join(dir, 'wrong') })]
    t.match(errors, [/DATABASE_URL/, /DATABASE_URL_FILE must contain a postgres:\/\/ URL/])
    for (const message of errors) t.notMatch(message, 'secret')
    t.match(refusal({ DATABASE_URL_FILE: join(dir, 'missing') }), /DATABASE_URL_FILE cannot be read \(ENOENT\)/)
  },
)

t.test(
  'TRUST_PROXY is false, true, or addresses and CIDRs as Fastify takes them; `true` refuses to start in production',
  async (t) => {
    t.same(
      [undefined, 'false', 'true'].map((TRUST_PROXY) => loadConfig({ TRUST_PROXY }).trustProxy),
      [false, false, true],
    )
    t.strictSame(loadConfig({ TRUST_PROXY: '10.0.0.1, 10.0.0.0/8,::1' }).trustProxy, ['10.0.0.1', '10.0.0.0/8', '::1'])
    const valid = (
      '0.0.0.0/1 192.168.1.7 172.16.0.0/12 10.0.0.1/32 2001:db8::1 2001:db8::/32 ' +
      '::/1 ::1/128 ::ffff:10.0.0.1 fe80::1:2:3:4'
    ).split(' ')
    const trustProxy = loadConfig({ TRUST_PROXY: valid.join(',') }).trustProxy
    t.strictSame(trustProxy, valid)
    t.doesNotThrow(() => Fastify({ trustProxy }), 'Fastify takes every one')
    const invalid =
      'gateway.local yes 10.0.0.0/8;rm 2 1,10.0.0.1 999.1.1.1 10.0.0.256 10.0.0 ::: 2001:db8:::1 10.0.0.0/99 ' +
      '10.0.0.0/33 ::/129 10.0.0.0/ 10.0.0.0/-1 10.0.0.0/8/8 10.0.0.0/0x8 0.0.0.0/0 0.0.0.0/00 ::/0 10.0.0.1,::/0'
    for (const value of [' , ', ...invalid.split(' ')])
      t.match(refusal({ TRUST_PROXY: value }), /^Invalid configuration: TRUST_PROXY must be/, value)
    const production = { NODE_ENV: 'production', PLANT_STORE_TOKENS: A }
    t.match(refusal({ ...production, TRUST_PROXY: 'true' }), /^Refusing to start: TRUST_PROXY trusts every/)
    t.strictSame(loadConfig({ ...production, TRUST_PROXY: '10.0.0.0/8' }).trustProxy, ['10.0.0.0/8'])
  },
)

t.test('MAX_CONNECTIONS is 10,000, or the open-file limit less 128 if lower, unless set', async (t) => {
  const limit = openFileLimit()
  t.equal(limit, Number(execFileSync('sh', ['-c', 'ulimit -Sn'], { encoding: 'utf8' })), 'the soft RLIMIT_NOFILE')
  t.equal(loadConfig({}).maxConnections, Math.min(10_000, limit - 128))
  t.equal(loadConfig({ MAX_CONNECTIONS: '500' }).maxConnections, 500, 'set')
})

t.test(
  'the settings table: a row per setting in order; --check fails on a stale one, writing nothing; a run rewrites it',
  async (t) => {
    const rows = (table: string) => table.split('\n').slice(2)
    t.strictSame(
      rows(settingsTable({ A: { default: 'x', description: 'one | two' }, B: { description: 'no default' } })),
      ['| `A` | `x` | one \\| two |', '| `B` | | no default |'],
    )
    const names = rows(settingsTable()).map((row) => /^\| `(\w+)` \|/.exec(row)?.[1])
    t.strictSame(names, Object.keys(settingsSchema.properties))
    t.throws(() => withSettingsTable('# Configuration\n', settingsTable()), /no "<!-- settings:start/)
    const path = join(t.testdir(), 'configuration.md')
    const fresh = withSettingsTable(`# Prose kept\n\n${TABLE_START}\n${TABLE_END}\n\nMore prose.\n`, settingsTable())
    const stale = fresh.replace('| `PORT` | `3000` |', '| `PORT` | `8080` |')
    t.not(stale, fresh)
    writeFileSync(path, stale)
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [...process.execArgv, 'scripts/config-reference.ts', ...args], { encoding: 'utf8' })
    const written = () => readFileSync(path, 'utf8')
    const check = run('--check', path)
    t.match(check, { status: 1, stderr: /the settings table is not service\/settings\.ts's schema; run `npm run gen/ })
    t.equal(written(), stale, '--check writes nothing')
    t.equal(run(path).status, 0)
    t.equal(written(), fresh, 'the table rewritten, the prose kept')
    t.equal(run('--check', path).status, 0, 'then --check passes')
    const reference = readFileSync(referencePath, 'utf8')
    t.equal(
      run('--check').status,
      withSettingsTable(reference, settingsTable()) === reference ? 0 : 1,
      'without a file it checks docs/configuration.md',
    )
  },
)
