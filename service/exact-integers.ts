/**
 * The exact-integer rule, for request bodies and parameters alike (openapi.yaml,
 * "Integers"): a handler receives every `int64` member as a `bigint` holding the
 * exact value sent, and its generated type says `bigint` (`npm run generate`), so
 * a rounded `number` cannot reach it unnoticed.
 *
 * Validation still sees numbers, as JSON Schema needs: an integer beyond 2^53 is
 * validated as its nearest double while its exact value is kept aside
 * ({@link forValidation}); one outside int64 is moved where {@link int64Format}
 * rejects it; a literal whose double is an integer but whose text is not
 * (`123.0000000000000001`) becomes NaN, which no JSON Schema type accepts. After
 * validation {@link exactInt64} hands over the exact values.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'

/** A plain decimal integer (RFC 8259 §6 `int`): no sign but `-`, no leading zeros, no fraction or exponent. */
export const PLAIN_INTEGER = /^-?(?:0|[1-9]\d*)$/

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
/** The smallest double above 2^63: every out-of-range integer is moved at least this far. */
const OUT_OF_INT64 = 2 ** 63 + 2048

/** Exact values of the members validated as rounded numbers, by holder and member name. */
const exactValues = new WeakMap<object, Map<string, bigint>>()

/**
 * The value a JSON number literal (RFC 8259 §6) is read as: a `number` when that is
 * exact, the exact `bigint` for an integer beyond 2^53, NaN for a literal whose
 * double is an integer but whose own value is not.
 */
export function numberOf(literal: string): number | bigint {
  const value = Number(literal)
  if (!Number.isInteger(value) || (Number.isSafeInteger(value) && PLAIN_INTEGER.test(literal))) return value
  const exact = integerOf(literal)
  if (exact === undefined) return Number.NaN
  return Number.isSafeInteger(Number(exact)) ? Number(exact) : exact
}

/**
 * Replaces every `bigint` at or below `holder[key]` by the number validation sees,
 * keeping the exact value of those within int64 for {@link exactInt64}.
 *
 * @returns the new value of `holder[key]`.
 */
export function forValidation(holder: Record<string, unknown>, key: string): unknown {
  const value = holder[key]
  if (typeof value === 'bigint') {
    if (value < INT64_MIN || value > INT64_MAX) return value < 0n ? -OUT_OF_INT64 : OUT_OF_INT64
    let exact = exactValues.get(holder)
    if (exact === undefined) exactValues.set(holder, (exact = new Map()))
    exact.set(key, value)
    return Number(value)
  }
  if (typeof value === 'object' && value !== null) {
    const members = value as Record<string, unknown>
    for (const member of Object.keys(members)) members[member] = forValidation(members, member)
  }
  return value
}

/**
 * The OpenAPI `int64` format (OpenAPI 3.1 §4.4) for Ajv: an integer within the
 * signed 64-bit range. Exact together with {@link forValidation}: in-range integers
 * reach it as their nearest double (at most 2^63), out-of-range ones beyond
 * ±(2^63 + 2048).
 */
export const int64Format = {
  type: 'number' as const,
  validate: (value: number): boolean => Number.isInteger(value) && value >= -(2 ** 63) && value <= 2 ** 63,
}

/**
 * The exact integer a number literal spells, computed in decimal so nothing is
 * rounded; `undefined` when it has a fractional part. Literals of more than 20
 * integer digits are out of int64 whatever they are, and are returned as ±10^20 so
 * that a huge exponent cannot cost a huge bigint.
 */
function integerOf(literal: string): bigint | undefined {
  if (literal.length <= 20 && PLAIN_INTEGER.test(literal)) return BigInt(literal)
  const [, sign, whole, fraction = '', exponent = '0'] = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)!
  const digits = (whole + fraction).replace(/^0+/, '')
  // Trailing zeros cut by a scan: `/0+$/` backtracks, quadratic in the literal's length.
  let end = digits.length
  while (end > 0 && digits.charCodeAt(end - 1) === 48) end--
  const significant = digits.slice(0, end)
  if (significant === '') return 0n
  const scale = Number(exponent) - fraction.length + (digits.length - significant.length)
  if (scale < 0) return undefined
  const magnitude = significant.length + scale > 20 ? 10n ** 20n : BigInt(significant) * 10n ** BigInt(scale)
  return sign === '-' ? -magnitude : magnitude
}

/** A JSON Schema as glue builds a route's (dereferenced). */
interface Schema extends Partial<Record<(typeof UNREAD_KEYWORDS)[number], unknown>> {
  type?: string | string[]
  format?: string
  properties?: Record<string, Schema>
  allOf?: Schema[]
  content?: Record<string, { schema?: Schema }>
}

/** Keywords whose members {@link int64Paths} does not follow. */
const UNREAD_KEYWORDS = ['items', 'prefixItems', 'oneOf', 'anyOf', 'additionalProperties', 'patternProperties'] as const

/** Where an int64 member sits below a request part: the member names, outermost first. */
type MemberPath = readonly string[]

/**
 * The paths of the `int64` members of `schema`, through `properties` and `allOf`
 * (and a request body's `content`).
 *
 * @throws {Error} at start-up, for an `int64` below any other keyword (`items`,
 *   `oneOf` …): the service would not hand it over exactly.
 */
function int64Paths(schema: Schema | undefined, at: MemberPath = []): MemberPath[] {
  if (schema === undefined) return []
  if (schema.format === 'int64') {
    if (at.length === 0) throw new Error('An int64 that is a whole request part cannot be handed over exactly')
    return [at]
  }
  const nested = [...Object.values(schema.content ?? {}).map((media) => media.schema), ...(schema.allOf ?? [])]
  const inside = Object.entries(schema.properties ?? {}).flatMap(([name, member]) => int64Paths(member, [...at, name]))
  for (const keyword of UNREAD_KEYWORDS) {
    if (JSON.stringify(schema[keyword] ?? null).includes('"format":"int64"')) throw new Error(`An int64 below ${['', ...at, keyword].join('/')} cannot be handed over exactly`)
  }
  return [...inside, ...nested.flatMap((member) => int64Paths(member, at))]
}

/** Sets the member at `path` below `holder` to its exact value, where the request has it. */
function handOver(holder: unknown, path: MemberPath): void {
  if (typeof holder !== 'object' || holder === null) return
  const [name, ...rest] = path as [string, ...string[]]
  const members = holder as Record<string, unknown>
  if (rest.length > 0) return handOver(members[name], rest)
  const value = members[name]
  if (typeof value === 'number') members[name] = exactValues.get(members)?.get(name) ?? BigInt(value)
}

/** The parts of a request whose int64 members are handed over, with their schema names. */
const PARTS = [
  { part: 'body', schema: 'body' },
  { part: 'params', schema: 'params' },
  { part: 'query', schema: 'querystring' },
] as const

/**
 * An `onRoute` hook that applies the rule to a contract route:
 * - path and query parameters, which arrive as text, are read before validation:
 *   each of an `integer` member that is a {@link PLAIN_INTEGER} becomes the number it
 *   spells; any other text (`1.5`, `01`, `+1`) stays a string, and validation answers
 *   400 `params/id must be integer` (no coercion, openapi.yaml "Integers");
 * - after validation, every `int64` member of the body and parameters becomes its
 *   exact `bigint`.
 *
 * Routes without such members are left as they are.
 *
 * @throws {Error} when an `int64` sits where it cannot be handed over (see {@link int64Paths}).
 */
export function exactInt64(route: RouteOptions): void {
  const schema = (route.schema ?? {}) as Partial<Record<(typeof PARTS)[number]['schema'], Schema>>
  const readers = (['params', 'querystring'] as const)
    .map((name) => ({ part: name === 'params' ? ('params' as const) : ('query' as const), integers: integerMembers(schema[name]) }))
    .filter(({ integers }) => integers.length > 0)
  if (readers.length > 0) {
    route.preValidation = [
      (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
        for (const { part, integers } of readers) request[part] = readIntegers({ ...(request[part] as Record<string, unknown>) }, integers)
        done()
      },
      ...[route.preValidation ?? []].flat(),
    ]
  }
  const handOvers = PARTS.map(({ part, schema: name }) => ({ part, paths: int64Paths(schema[name]) })).filter(({ paths }) => paths.length > 0)
  if (handOvers.length === 0) return
  route.preHandler = [
    ...[route.preHandler ?? []].flat(),
    function handOverExactInt64(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
      for (const { part, paths } of handOvers) for (const path of paths) handOver(request[part], path)
      done()
    },
  ]
}

/** The names of the members of a parameters schema whose type is (or includes) `integer`. */
function integerMembers(schema: Schema | undefined): string[] {
  return Object.entries(schema?.properties ?? {})
    .filter(([, member]) => [member.type].flat().includes('integer'))
    .map(([name]) => name)
}

/** `holder` with each of `integers` that is a plain integer string read as its number. */
function readIntegers(holder: Record<string, unknown>, integers: readonly string[]): Record<string, unknown> {
  for (const name of integers) {
    const text = holder[name]
    if (typeof text !== 'string' || !PLAIN_INTEGER.test(text)) continue
    holder[name] = numberOf(text)
    holder[name] = forValidation(holder, name)
  }
  return holder
}
