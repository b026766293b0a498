/** Typed HTTP errors and the contract's `Error` body; plugins/strict-http maps any failure to it. @module */
import type { components } from './generated/openapi.ts'
import { StoreUnavailableError } from './store/plant-repository.ts'

/** An error with its HTTP status and headers (`WWW-Authenticate`, `Retry-After`, `Allow`). */
export class HttpError extends Error {
  readonly statusCode: number
  readonly headers: Readonly<Record<string, string>>
  /** The message is the client's to read, 5xx too (the http-errors convention strict-http follows). */
  readonly expose = true

  /** @param message - sent to the client, so no internals. */
  constructor(statusCode: number, message: string, headers: Readonly<Record<string, string>> = {}) {
    super(message)
    this.statusCode = statusCode
    this.headers = headers
    this.name = 'HttpError'
  }
}

/** 401 with the RFC 6750 §3 challenge; `error="invalid_token"` when a token was sent but is not valid (§3.1). */
export class UnauthorizedError extends HttpError {
  constructor(realm: string, invalidToken: boolean) {
    const challenge = invalidToken ? `Bearer realm="${realm}", error="invalid_token"` : `Bearer realm="${realm}"`
    super(401, invalidToken ? 'The bearer token is not valid' : 'A bearer token is required', {
      'www-authenticate': challenge,
    })
  }
}

/**
 * 503 with `Retry-After` in seconds (RFC 9110 §10.2.3), as openapi.yaml declares: a retry with the same body is
 * safe, and a replay if the write was stored after all (responses.ServiceUnavailable).
 */
export class ServiceUnavailableError extends HttpError {
  constructor(message: string) {
    super(503, message, { 'retry-after': '1' })
  }
}

/** Message of a 415 for a body that is not JSON: the one media type the contract declares (RFC 9110 §15.5.16). */
export const UNSUPPORTED_MEDIA_TYPE = 'Unsupported Media Type: send the body as application/json'

type ErrorBody = components['schemas']['Error']

/** The contract's `Error` body (openapi.yaml, "Errors"), the shape strict-http answers every failure with. */
export function errorBody(statusCode: number, message: string): ErrorBody {
  return { error: statusCode, message }
}

/** The service's own failures as HTTP errors, for strict-http's one mapping; anything else as it is. */
export function httpErrorOf(error: unknown): unknown {
  // Any operation's; a retry is safe (openapi.yaml, responses.ServiceUnavailable).
  if (error instanceof StoreUnavailableError)
    return new ServiceUnavailableError('The store is unavailable; retry later')
  // Fastify's (no parser for the media type, none given) would echo the client's Content-Type.
  if (errorCode(error) === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new HttpError(415, UNSUPPORTED_MEDIA_TYPE)
  return error
}

/** A thrown value as an `Error`: itself, or one whose message is its text. */
export function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(String(thrown))
}

/** The `code` of a thrown value (Node's `ENOENT`, Fastify's `FST_…`, a database's), if it has one. */
export function errorCode(thrown: unknown): unknown {
  return typeof thrown === 'object' && thrown !== null && 'code' in thrown ? thrown.code : undefined
}
