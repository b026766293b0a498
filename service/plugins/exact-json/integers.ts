/** Number literals read exactly: `int64` values as `bigint`, validated as the nearest double. @module */

/** A plain decimal integer (RFC 8259 §6 `int`). */
export const PLAIN_INTEGER = /^-?(?:0|[1-9]\d*)$/

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
/** The smallest double above 2^63: every out-of-range integer is moved at least this far. */
const OUT_OF_INT64 = 2 ** 63 + 2048

/** A holder's exact values of members validated as rounded numbers; validation skips symbols. */
export const EXACT = Symbol('exact int64 values')

/** An object or array of a parsed body or of parameters, with the exact values of its int64 members. */
export type Holder = Record<string, unknown> & { [EXACT]?: Map<string, bigint> }

/** An object or an array: its members read and replaced by name. */
export function isHolder(value: unknown): value is Holder {
  return typeof value === 'object' && value !== null
}

/** A JSON number literal's value: `number` when exact, `bigint` past 2^53, NaN for a non-integer that rounds to one. */
export function numberOf(literal: string): number | bigint {
  const value = Number(literal)
  if (!Number.isInteger(value) || (Number.isSafeInteger(value) && PLAIN_INTEGER.test(literal))) return value
  const exact = integerOf(literal)
  if (exact === undefined) return Number.NaN
  return Number.isSafeInteger(Number(exact)) ? Number(exact) : exact
}

/** Replaces each `bigint` at or below `holder[key]` by the number validation sees, keeping exact values; returns it. */
export function forValidation(holder: Holder, key: string): unknown {
  const value = holder[key]
  if (typeof value === 'bigint') {
    if (value < INT64_MIN) return -OUT_OF_INT64
    if (value > INT64_MAX) return OUT_OF_INT64
    const exact = (holder[EXACT] ??= new Map())
    exact.set(key, value)
    return Number(value)
  }
  if (isHolder(value)) for (const member of Object.keys(value)) value[member] = forValidation(value, member)
  return value
}

/** OpenAPI's `int64` format (OpenAPI 3.1 §4.4) for Ajv, exact given {@link forValidation}'s numbers. */
export const int64Format = {
  type: 'number' as const,
  validate: (value: number): boolean => Number.isInteger(value) && value >= -(2 ** 63) && value <= 2 ** 63,
}

/** The exact integer a JSON number literal of a finite double spells; `undefined` if fractional. */
function integerOf(literal: string): bigint | undefined {
  if (PLAIN_INTEGER.test(literal)) return BigInt(literal)
  // `literal` is valid JSON: the match starts at 0 and takes it all.
  const [, sign, whole, fraction = '', exponent] = /(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?/.exec(literal)!
  const digits = whole + fraction
  // Not `/0+$/`: it backtracks quadratically.
  let end = digits.length
  while (digits.charCodeAt(end - 1) === 48) end--
  const significant = digits.slice(0, end)
  if (significant === '') return 0n
  const scale = Number(exponent ?? 0) - fraction.length + (digits.length - significant.length)
  if (scale < 0) return undefined
  // At most about 400 digits: numberOf got here with a finite double.
  const magnitude = BigInt(significant) * 10n ** BigInt(scale)
  return sign === '-' ? -magnitude : magnitude
}
