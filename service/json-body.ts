/**
 * The `application/json` body parser: lossless-json, which shows each number's text,
 * read by the exact-integer rule (exact-integers.ts).
 * @module
 */
import { parse } from 'lossless-json'
import { HttpError } from './errors.js'
import { forValidation, numberOf } from './exact-integers.js'

/**
 * Longest number literal, in characters (RFC 8259 §9 lets a parser limit it), so parsing
 * stays linear: any encoder writes an int64 or a double in 25, padding aside.
 */
export const MAX_NUMBER_LENGTH = 100

/**
 * Parses a body for validation: integers past 2^53 as their nearest number, the exact value kept aside.
 * @throws {HttpError} 400 when the text is not JSON, repeats a member name with a different
 *   value (RFC 8259 §4 leaves which one wins open), or has a number over {@link MAX_NUMBER_LENGTH}.
 */
export function parseJsonBody(text: string): unknown {
  let sawBigInt = false
  const parseNumber = (literal: string): number | bigint => {
    if (literal.length > MAX_NUMBER_LENGTH) throw new HttpError(400, `A number in the request is longer than ${MAX_NUMBER_LENGTH} characters`)
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
