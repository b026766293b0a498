/**
 * The `application/json` body parser: JSON (RFC 8259) with exact integers and no
 * duplicate member names, parsed by lossless-json, which shows each number's text.
 *
 * - Numbers are read by the exact-integer rule (service/exact-integers.ts).
 * - A member name repeated with a different value is a 400: RFC 8259 §4 leaves its
 *   meaning open, and parsers differ on which value wins. Repeated with an equal
 *   value it is accepted, since every parser reads the same object.
 * - A number literal longer than {@link MAX_NUMBER_LENGTH} characters is a 400
 *   before any work on its value (RFC 8259 §9 lets a parser limit precision), so
 *   parsing stays linear in the body's size whatever its numbers are.
 *
 * @module
 */
import { parse } from 'lossless-json'
import { HttpError } from './errors.js'
import { forValidation, numberOf } from './exact-integers.js'

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
 * @returns the parsed value, ready for validation (integers beyond 2^53 as their
 *   nearest number, the exact value kept for the handler).
 * @throws {HttpError} 400 when the text is not JSON, repeats a member name with a
 *   different value, or has a number over {@link MAX_NUMBER_LENGTH} characters.
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
