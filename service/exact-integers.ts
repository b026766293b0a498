/** The exact-integer rule (openapi.yaml, "Integers"): handlers get every `int64` member as its exact `bigint`. @module */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'

/** A plain decimal integer (RFC 8259 §6 `int`). */
export const PLAIN_INTEGER = /^-?(?:0|[1-9]\d*)$/

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
/** The smallest double above 2^63: every out-of-range integer is moved at least this far. */
const OUT_OF_INT64 = 2 ** 63 + 2048

/** A holder's exact values of members validated as rounded numbers; validation skips symbols. */
const EXACT = Symbol('exact int64 values')

type Holder = Record<string, unknown> & { [EXACT]?: Map<string, bigint> }

/** A JSON number literal's value: `number` when exact, `bigint` past 2^53, NaN for a non-integer that rounds to one. */
export function numberOf(literal: string): number | bigint {
  const value = Number(literal)
  if (!Number.isInteger(value) || (Number.isSafeInteger(value) && PLAIN_INTEGER.test(literal))) return value
  const exact = integerOf(literal)
  if (exact === undefined) return Number.NaN
  return Number.isSafeInteger(Number(exact)) ? Number(exact) : exact
}

/** Replaces every `bigint` at or below `holder[key]` by the number validation sees, keeping exact values; returns it. */
export function forValidation(holder: Holder, key: string): unknown {
  const value = holder[key]
  if (typeof value === 'bigint') {
    if (value < INT64_MIN || value > INT64_MAX) return value < 0n ? -OUT_OF_INT64 : OUT_OF_INT64
    const exact = (holder[EXACT] ??= new Map())
    exact.set(key, value)
    return Number(value)
  }
  if (typeof value === 'object' && value !== null) {
    const members = value as Record<string, unknown>
    for (const member of Object.keys(members)) members[member] = forValidation(members, member)
  }
  return value
}

/** OpenAPI's `int64` format (OpenAPI 3.1 §4.4) for Ajv, exact given {@link forValidation}'s numbers. */
export const int64Format = {
  type: 'number' as const,
  validate: (value: number): boolean => Number.isInteger(value) && value >= -(2 ** 63) && value <= 2 ** 63,
}

/** The exact integer a literal spells, capped at ±10^20 (outside int64); `undefined` with a fractional part. */
function integerOf(literal: string): bigint | undefined {
  if (literal.length <= 20 && PLAIN_INTEGER.test(literal)) return BigInt(literal)
  const [, sign, whole, fraction = '', exponent = '0'] = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)!
  const digits = (whole + fraction).replace(/^0+/, '')
  // Not `/0+$/`: it backtracks quadratically.
  let end = digits.length
  while (end > 0 && digits.charCodeAt(end - 1) === 48) end--
  const significant = digits.slice(0, end)
  if (significant === '') return 0n
  const scale = Number(exponent) - fraction.length + (digits.length - significant.length)
  if (scale < 0) return undefined
  const magnitude = significant.length + scale > 20 ? 10n ** 20n : BigInt(significant) * 10n ** BigInt(scale)
  return sign === '-' ? -magnitude : magnitude
}

interface Schema extends Partial<Record<(typeof UNREAD_KEYWORDS)[number], unknown>> {
  type?: string | string[]
  format?: string
  properties?: Record<string, Schema>
  items?: Schema
  allOf?: Schema[]
  content?: Record<string, { schema?: Schema }>
}

/** Keywords below which an `int64` cannot be located: refused at start-up. */
const UNREAD_KEYWORDS = ['prefixItems', 'oneOf', 'anyOf', 'additionalProperties', 'patternProperties'] as const

const EACH_ITEM = Symbol('each item')

type MemberPath = ReadonlyArray<string | typeof EACH_ITEM>

/** @throws {Error} for an `int64` below any other keyword ({@link UNREAD_KEYWORDS}), naming where. */
function int64Paths(schema: Schema | undefined, at: MemberPath = []): MemberPath[] {
  if (schema === undefined) return []
  if (schema.format === 'int64') {
    if (at.length === 0) throw new Error('An int64 that is a whole request part cannot be handed over exactly')
    return [at]
  }
  const nested = [...Object.values(schema.content ?? {}).map((media) => media.schema), ...(schema.allOf ?? [])]
  const inside = Object.entries(schema.properties ?? {}).flatMap(([name, member]) => int64Paths(member, [...at, name]))
  for (const keyword of UNREAD_KEYWORDS) {
    const where = ['', ...at.map((name) => (name === EACH_ITEM ? 'items' : name)), keyword].join('/')
    if (JSON.stringify(schema[keyword] ?? null).includes('"format":"int64"'))
      throw new Error(`An int64 below ${where} cannot be handed over exactly`)
  }
  return [
    ...inside,
    ...int64Paths(schema.items, [...at, EACH_ITEM]),
    ...nested.flatMap((member) => int64Paths(member, at)),
  ]
}

function handOver(holder: unknown, path: MemberPath): void {
  if (typeof holder !== 'object' || holder === null) return
  const [name, ...rest] = path
  const members = holder as Holder
  for (const member of name === EACH_ITEM ? (Array.isArray(holder) ? Object.keys(holder) : []) : [name!]) {
    const value = members[member]
    if (rest.length > 0) handOver(value, rest)
    else if (typeof value === 'number') members[member] = members[EXACT]?.get(member) ?? BigInt(value)
  }
}

const PARTS = [
  { part: 'body', schema: 'body' },
  { part: 'params', schema: 'params' },
  { part: 'query', schema: 'querystring' },
] as const

/** `onRoute` hook: plain-integer parameters become numbers before validation, `int64` members `bigint` after. @throws {Error} see {@link int64Paths}. */
export function exactInt64(route: RouteOptions): void {
  const schema = (route.schema ?? {}) as Partial<Record<(typeof PARTS)[number]['schema'], Schema>>
  const readers = PARTS.filter(({ part }) => part !== 'body')
    .map(({ part, schema: name }) => ({ part, integers: integerMembers(schema[name]) }))
    .filter(({ integers }) => integers.length > 0)
  if (readers.length > 0) {
    route.preValidation = [
      function readIntegerParameters(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
        for (const { part, integers } of readers)
          request[part] = readIntegers({ ...(request[part] as Record<string, unknown>) }, integers)
        done()
      },
      ...[route.preValidation ?? []].flat(),
    ]
  }
  const handOvers = PARTS.map(({ part, schema: name }) => ({ part, paths: int64Paths(schema[name]) })).filter(
    ({ paths }) => paths.length > 0,
  )
  if (handOvers.length === 0) return
  route.preHandler = [
    ...[route.preHandler ?? []].flat(),
    function handOverExactInt64(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
      for (const { part, paths } of handOvers) for (const path of paths) handOver(request[part], path)
      done()
    },
  ]
}

function integerMembers(schema: Schema | undefined): string[] {
  return Object.entries(schema?.properties ?? {})
    .filter(([, member]) => [member.type].flat().includes('integer'))
    .map(([name]) => name)
}

function readIntegers(holder: Record<string, unknown>, integers: readonly string[]): Record<string, unknown> {
  for (const name of integers) {
    const text = holder[name]
    if (typeof text !== 'string' || !PLAIN_INTEGER.test(text)) continue
    holder[name] = numberOf(text)
    holder[name] = forValidation(holder, name)
  }
  return holder
}
