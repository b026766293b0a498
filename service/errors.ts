/**
 * Typed HTTP errors, and the one place where any failure becomes the contract's
 * `Error` body (`{ error, message }`, `error` equal to the HTTP status).
 *
 * @module
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'

/** An error that carries the HTTP status it must be answered with, and its headers. */
export class HttpError extends Error {
  /**
   * @param statusCode - HTTP status (4xx or 5xx) declared in openapi.yaml.
   * @param message - text for a person; it is sent to the client, so no internals.
   * @param headers - response headers that belong to this error (e.g. `WWW-Authenticate`).
   */
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message)
    this.name = 'HttpError'
  }
}

/**
 * 401: no usable bearer token. Carries the `WWW-Authenticate` challenge of RFC 6750 §3,
 * with `error="invalid_token"` when a bearer token was sent but is not valid (§3.1).
 */
export class UnauthorizedError extends HttpError {
  /**
   * @param realm - protection space named in the challenge (RFC 9110 §11.5).
   * @param invalidToken - whether a bearer token was sent and rejected.
   */
  constructor(realm: string, invalidToken: boolean) {
    const challenge = invalidToken ? `Bearer realm="${realm}", error="invalid_token"` : `Bearer realm="${realm}"`
    super(401, invalidToken ? 'The bearer token is not valid' : 'A bearer token is required', {
      'www-authenticate': challenge,
    })
  }
}

/**
 * 503: the store is unavailable, or the service is draining; nothing was stored.
 * Carries `Retry-After` in seconds (RFC 9110 §10.2.3), as openapi.yaml declares
 * for `ServiceUnavailable`.
 */
export class ServiceUnavailableError extends HttpError {
  /** @param message - what is unavailable, for a person. */
  constructor(message: string) {
    super(503, message, { 'retry-after': '1' })
  }
}

/** Message of every 415: the one media type the contract declares (RFC 9110 §15.5.16). */
export const UNSUPPORTED_MEDIA_TYPE = 'Unsupported Media Type: send the body as application/json'

/** The shape of the contract's `Error` schema (components.schemas.Error). */
export interface ErrorBody {
  error: number
  message: string
}

/** glue's SecurityError: thrown when no security scheme accepted the request. */
interface SecurityFailure {
  statusCode: number
  errors: unknown[]
}

function isSecurityFailure(error: unknown): error is SecurityFailure {
  return error instanceof Error && error.name === 'Unauthorized' && Array.isArray((error as unknown as SecurityFailure).errors)
}

/**
 * Maps any error to its status, headers and `Error` body.
 *
 * - {@link HttpError}: its own status, message and headers.
 * - glue's SecurityError: the first {@link HttpError} a security handler threw.
 * - Fastify's and its plugins' client errors (validation 400, 413 body too large,
 *   415 media type, 429 rate limit) and under-pressure's 503: their status and message.
 * - anything else: 500 with a fixed message; the cause is only logged.
 *
 * @returns `internal` is true when the error is a fault of the service.
 */
export function toErrorResponse(error: unknown): {
  statusCode: number
  headers: Readonly<Record<string, string>>
  body: ErrorBody
  internal: boolean
} {
  if (isSecurityFailure(error)) {
    const cause = error.errors.find((item) => item instanceof HttpError)
    if (cause) return toErrorResponse(cause)
  }
  if (error instanceof HttpError) {
    return { statusCode: error.statusCode, headers: error.headers, body: { error: error.statusCode, message: error.message }, internal: false }
  }
  const fastifyError = (error ?? {}) as Partial<FastifyError>
  const statusCode = fastifyError.statusCode
  // Client errors of Fastify and its plugins, and 503 of load shedding (under-pressure).
  if (typeof statusCode === 'number' && ((statusCode >= 400 && statusCode < 500) || statusCode === 503)) {
    const message = statusCode === 415 ? UNSUPPORTED_MEDIA_TYPE : (fastifyError.message as string)
    return { statusCode, headers: {}, body: { error: statusCode, message }, internal: false }
  }
  return { statusCode: 500, headers: {}, body: { error: 500, message: 'Internal Server Error' }, internal: true }
}

/**
 * Fastify error handler: the single place where errors become responses.
 * Internal failures are logged with their cause; client errors at `info`.
 */
export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const response = toErrorResponse(error)
  if (response.internal) {
    request.log.error({ err: error }, 'request failed')
  } else {
    request.log.info({ statusCode: response.statusCode, reason: response.body.message }, 'request rejected')
  }
  return reply.code(response.statusCode).headers(response.headers).send(response.body)
}

/** Not-found handler: 404 with the `Error` body. */
export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.code(404).send({ error: 404, message: `Route ${request.method} ${request.url.split('?')[0]} not found` })
}
