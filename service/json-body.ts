/**
 * The `application/json` body parser: JSON with exact 64-bit integers and no
 * duplicate member names.
 *
 * `JSON.parse` rounds integers beyond 2^53 (1152921504606846977 becomes
 * 1152921504606847000) and keeps the last of duplicate names. This parser
 * (lossless-json) sees each number's text, so:
 *
 * - an integer outside the safe range gets its exact value recorded beside the
 *   parsed body (read it with {@link exactInteger}); the body itself holds a
 *   number so that the contract's JSON Schema validation still applies;
 * - an integer outside the signed 64-bit range is given a value that the `int64`
 *   format rejects (see {@link int64Format}), so validation answers 400 and names
 *   the field, rather than rounding it into range;
 * - a number whose double is an integer but whose text is not (123.0000000000000001)
 *   becomes NaN, which no JSON Schema type accepts, instead of a rounded integer;
 * - a member name repeated with a different value is a 400: RFC 8259 §4 leaves
 *   its meaning open, and parsers differ on which value wins. Repeated with an
 *   equal value it is accepted, since every parser reads the same object;
 * - a number literal longer than {@link MAX_NUMBER_LENGTH} characters is a 400
 *   before any work on its value (RFC 8259 §9 lets a parser limit precision), so
 *   parsing stays linear in the body's size whatever its numbers are.
 *
 * @module
 */
import { parse } from 'lossless-json'
import { HttpError } from './errors.js'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
/** The smallest double above 2^63: every out-of-range integer is moved at least this far. */
const OUT_OF_INT64 = 2 ** 63 + 2048

const exactValues = new WeakMap<object, Map<string, bigint>>()

/**
 * The longest number literal accepted, in characters: room for every int64 and
 * every double as any JSON encoder writes them (at most 25), with a wide margin for
 * zero padding (`1.000…0e3`).
 */
export const MAX_NUMBER_LENGTH = 100

/**
 * Parses a JSON request body.
 *
 * @param text - the body, decoded as UTF-8.
 * @returns the parsed value; integers beyond 2^53 are numbers whose exact value is
 *   available through {@link exactInteger}.
 * @throws {HttpError} 400 when the text is not JSON (RFC 8259), repeats a member
 *   name with a different value, or has a number over {@link MAX_NUMBER_LENGTH}.
 */
export function parseJsonBody(text: string): unknown {
  let sawUnsafeInteger = false
  const parseNumber = (literal: string): number | bigint => {
    if (literal.length > MAX_NUMBER_LENGTH) throw new HttpError(400, `A number in the request is longer than ${MAX_NUMBER_LENGTH} characters`)
    const value = Number(literal)
    if (!Number.isInteger(value) || (Number.isSafeInteger(value) && plainInteger.test(literal))) return value
    const exact = exactIntegerOf(literal)
    if (exact === undefined) return Number.NaN
    if (Number.isSafeInteger(Number(exact))) return Number(exact)
    sawUnsafeInteger = true
    return exact
  }
  let value: unknown
  try {
    value = parse(text, null, parseNumber)
  } catch (error) {
    if (error instanceof HttpError) throw error
    throw new HttpError(400, `Body is not valid JSON: ${(error as Error).message}`)
  }
  if (sawUnsafeInteger) value = replaceBigInts({ '': value }, '')
  return value
}
/**
 * The exact value of an integer member that was outside the safe range in the
 * request body, if it was.
 *
 * @param holder - the parsed object that holds the member.
 * @param key - the member name.
 * @returns the exact integer, or `undefined` when the member was a safe integer
 *   (its number is then exact) or not an integer.
 */
export function exactInteger(holder: object, key: string): bigint | undefined {
  return exactValues.get(holder)?.get(key)
}

/**
 * The OpenAPI `int64` format (OpenAPI 3.1 §4.4) for Ajv: an integer within the
 * signed 64-bit range. Together with the parser above it is exact: in-range
 * integers reach it as their nearest double (at most 2^63), out-of-range ones
 * beyond ±(2^63 + 2048).
 */
export const int64Format = {
  type: 'number' as const,
  validate: (value: number): boolean => Number.isInteger(value) && value >= -(2 ** 63) && value <= 2 ** 63,
}

/**
 * Replaces every bigint below `holder[key]` by a number for validation, recording
 * the exact value of those within int64 beside their holder.
 */
function replaceBigInts(holder: Record<string, unknown>, key: string): unknown {
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
    for (const member of Object.keys(members)) members[member] = replaceBigInts(members, member)
  }
  return value
}

const plainInteger = /^-?\d+$/

/**
 * The exact value of a JSON number literal (RFC 8259 §6) if it is an integer,
 * computed in decimal so nothing is rounded; `undefined` if it has a fractional part.
 * Literals with more than 20 integer digits are out of int64 whatever they are, and
 * are returned as ±10^20 so that a huge exponent cannot cost a huge bigint.
 */
function exactIntegerOf(literal: string): bigint | undefined {
  // A plain integer of at most 20 characters (every int64, and a little beyond): BigInt reads it exactly.
  if (literal.length <= 20 && plainInteger.test(literal)) return BigInt(literal)
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
