/** The `application/json` body parser (RFC 8259), keeping each number's text for exact-integers.ts. @module */
import { parse as parseMediaType } from 'content-type'
import { parse } from 'lossless-json'
import { HttpError } from './errors.ts'
import { forValidation, numberOf } from './exact-integers.ts'

/** Longest number literal, characters (RFC 8259 §9), so parsing stays linear. */
export const MAX_NUMBER_LENGTH = 100

/** Deepest nesting of arrays and objects (RFC 8259 §9). */
export const MAX_DEPTH = 64

export const UTF8_ONLY = 'Unsupported Media Type: send the body as application/json in UTF-8 (RFC 8259 §8.1)'

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** @throws {HttpError} 415 when the `Content-Type` names a charset other than UTF-8, or cannot be parsed (RFC 9110 §8.3). */
export function requireUtf8(contentType: string): void {
  let charset: string | undefined
  try {
    charset = parseMediaType(contentType).parameters.charset
  } catch {
    throw new HttpError(415, UTF8_ONLY)
  }
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) throw new HttpError(415, UTF8_ONLY)
}

/** @throws {HttpError} 400 for non-UTF-8, invalid JSON, too deep, a repeated member (RFC 8259 §4), or a too-long number. */
export function parseJsonBody(body: Uint8Array | string): unknown {
  let text: string
  try {
    text = typeof body === 'string' ? body : utf8.decode(body)
  } catch {
    throw new HttpError(400, 'Body is not valid UTF-8 (RFC 8259 §8.1)')
  }
  if (nestsDeeperThan(text, MAX_DEPTH))
    throw new HttpError(400, `Body nests arrays and objects deeper than ${MAX_DEPTH} levels`)
  let sawBigInt = false
  const parseNumber = (literal: string): number | bigint => {
    if (literal.length > MAX_NUMBER_LENGTH)
      throw new HttpError(400, `A number in the request is longer than ${MAX_NUMBER_LENGTH} characters`)
    const value = numberOf(literal)
    sawBigInt ||= typeof value === 'bigint'
    return value
  }
  let value: unknown
  try {
    value = parse(text, null, parseNumber)
  } catch (error) {
    if (error instanceof HttpError) throw error
    throw new HttpError(400, `Body is not valid JSON: ${(error as Error).message}`)
  }
  return sawBigInt ? forValidation({ '': value }, '') : value
}

/** Counts only `[`/`{` outside strings; the parser checks the rest. */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (inString) {
      if (code === 0x5c) index++
      else if (code === 0x22) inString = false
    } else if (code === 0x22) inString = true
    else if (code === 0x5b || code === 0x7b) {
      if (++depth > limit) return true
    } else if (code === 0x5d || code === 0x7d) depth--
  }
  return false
}
