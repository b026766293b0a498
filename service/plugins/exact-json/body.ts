/** The `application/json` body parser (RFC 8259): exact numbers, strict UTF-8, no repeated names, bounded. @module */
import { parse as parseMediaType } from 'content-type'
import { parse } from 'lossless-json'
import { forValidation, numberOf } from './integers.ts'

/** Longest number literal, characters (RFC 8259 §9), so parsing stays linear. */
export const MAX_NUMBER_LENGTH = 100

/** Deepest nesting of arrays and objects (RFC 8259 §9). */
export const MAX_DEPTH = 64

/** Characters of a repeated member name quoted in its 400. */
export const QUOTED_KEY_LENGTH = 40

/** Message of the 415 for a body declared in another charset or not valid UTF-8. */
export const UTF8_ONLY = 'Unsupported Media Type: send the body as application/json in UTF-8 (RFC 8259 §8.1)'

/** Message of the 415 for a body with a content coding; it carries `Accept-Encoding: identity`. */
export const IDENTITY_ONLY =
  'Unsupported Media Type: send the body without a content coding (Content-Encoding: identity, RFC 9110 §8.4.1)'

/** A refused body: Fastify's error handler answers `statusCode` with `message` (and `headers`, RFC 9110 §15.5.16). */
export class ExactJsonError extends Error {
  readonly statusCode: number
  readonly code: string
  readonly headers: Readonly<Record<string, string>>

  constructor(statusCode: 400 | 415, message: string, headers: Readonly<Record<string, string>> = {}) {
    super(message)
    this.statusCode = statusCode
    this.headers = headers
    this.code = statusCode === 400 ? 'EXACT_JSON_INVALID_BODY' : 'EXACT_JSON_UNSUPPORTED_MEDIA_TYPE'
    this.name = 'ExactJsonError'
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * @param contentType - the request's `Content-Type` (none is 415).
 * @param contentEncoding - the request's `Content-Encoding`, if any.
 * @throws {ExactJsonError} 415 for a charset other than UTF-8, unparsable parameters (RFC 9110 §8.3),
 *   or a content coding other than `identity` (RFC 9110 §8.4.1, §15.5.16).
 */
export function requireIdentityUtf8(contentType: string | undefined, contentEncoding?: string): void {
  if (contentEncoding !== undefined && !/^\s*identity\s*$/i.test(contentEncoding))
    throw new ExactJsonError(415, IDENTITY_ONLY, { 'accept-encoding': 'identity' })
  let charset: string | undefined
  try {
    charset = parseMediaType({ headers: { 'content-type': contentType } }).parameters.charset
  } catch {
    throw new ExactJsonError(415, UTF8_ONLY)
  }
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) throw new ExactJsonError(415, UTF8_ONLY)
}

/**
 * @returns the JSON value; numbers per {@link numberOf}, `int64` candidates as validation sees them.
 * @throws {ExactJsonError} 400 for non-UTF-8, invalid JSON, too deep, a repeated member with another value
 *   (RFC 8259 §4), or a too-long number.
 */
export function parseJsonBody(body: Uint8Array | string): unknown {
  let text: string
  try {
    text = typeof body === 'string' ? body : utf8.decode(body)
  } catch {
    throw new ExactJsonError(400, 'Body is not valid UTF-8 (RFC 8259 §8.1)')
  }
  const shape = shapeOf(text)
  if (shape.depth > MAX_DEPTH)
    throw new ExactJsonError(400, `Body nests arrays and objects deeper than ${MAX_DEPTH} levels`)
  return (shape.plain ? parsedIfSame(text, shape.members) : undefined) ?? losslessly(text)
}

/**
 * JSON.parse's value of a body whose numbers are all safe integers as written, when it has all `members`
 * (no repeated name); else `undefined`, for lossless-json to read (or refuse) it.
 */
export function parsedIfSame(text: string, members: number): unknown {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  return membersOf(value) === members ? value : undefined
}

function losslessly(text: string): unknown {
  const parseNumber = (literal: string): number | bigint => {
    if (literal.length > MAX_NUMBER_LENGTH)
      throw new ExactJsonError(400, `A number in the request is longer than ${MAX_NUMBER_LENGTH} characters`)
    return numberOf(literal)
  }
  const onDuplicateKey = ({ key, position }: { key: string; position: number }): never => {
    const quoted = key.length > QUOTED_KEY_LENGTH ? `${key.slice(0, QUOTED_KEY_LENGTH)}…` : key
    throw new ExactJsonError(
      400,
      `Body is not valid JSON: Duplicate key '${quoted}' encountered at position ${position}`,
    )
  }
  let value: unknown
  try {
    value = parse(text, null, { parseNumber, onDuplicateKey })
  } catch (error) {
    // lossless-json's own refusals; ours pass as they are.
    if (!(error instanceof SyntaxError)) throw error
    throw new ExactJsonError(400, `Body is not valid JSON: ${error.message}`)
  }
  return forValidation({ '': value }, '')
}

/** Members of all objects in a parsed value. */
function membersOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  let count = Array.isArray(value) ? 0 : Object.keys(value).length
  for (const member of Object.values(value)) count += membersOf(member)
  return count
}

/**
 * One pass outside strings: the deepest nesting, the members (`:`), and whether every number is a plain integer
 * of at most 15 digits (so a safe integer). The parser checks the rest.
 */
export function shapeOf(text: string): { depth: number; members: number; plain: boolean } {
  let depth = 0
  let deepest = 0
  let members = 0
  let digits = 0
  let plain = true
  let inString = false
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (inString) {
      if (code === 0x5c) index++
      else if (code === 0x22) inString = false
      continue
    }
    if (code >= 0x30 && code <= 0x39) {
      if (++digits > 15) plain = false
      continue
    }
    // `.`, or `e`/`E` after a digit: a fraction or an exponent.
    if (code === 0x2e || (digits > 0 && (code | 0x20) === 0x65)) plain = false
    digits = 0
    if (code === 0x22) inString = true
    else if (code === 0x3a) members++
    else if (code === 0x5b || code === 0x7b) {
      deepest = Math.max(deepest, ++depth)
      if (deepest > MAX_DEPTH) break
    } else if (code === 0x5d || code === 0x7d) depth--
  }
  return { depth: deepest, members, plain }
}
