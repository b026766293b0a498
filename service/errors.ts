/**
 * Typed HTTP errors, and the one place where any failure becomes the contract's
 * `Error` body (`{ error, message }`, `error` equal to the HTTP status): failures
 * in a route, requests Fastify's router rejects before any route runs, and
 * requests Node's HTTP parser rejects before Fastify sees them.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { components } from './generated/openapi.js'

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
 * 503: the store is unavailable, the service is overloaded or draining; nothing was stored.
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

/** The answer to CONNECT (RFC 9110 §9.3.6): the service opens no tunnel. */
export const CONNECT_REFUSED = 'Bad Request: CONNECT asks for a tunnel, which the service does not open'

/** The contract's `Error` body. */
type ErrorBody = components['schemas']['Error']

/** glue's SecurityError: thrown when no security scheme accepted the request. */
interface SecurityFailure {
  statusCode: number
  errors: unknown[]
}

function isSecurityFailure(error: unknown): error is SecurityFailure {
  return error instanceof Error && error.name === 'Unauthorized' && Array.isArray((error as unknown as SecurityFailure).errors)
}

/**
 * Statuses of the requests Node's HTTP server rejects itself (node:http `clientError`),
 * by error code; Node's own choices (lib/_http_server.js). Any other parser error
 * (llhttp's `HPE_*`: request line, header syntax, Content-Length, chunked
 * encoding) is 400.
 */
const CLIENT_ERRORS: ReadonlyMap<string, { statusCode: number; message: string }> = new Map([
  // The headers within HEADERS_TIMEOUT_MS, the whole request within REQUEST_TIMEOUT_MS.
  ['ERR_HTTP_REQUEST_TIMEOUT', { statusCode: 408, message: 'Request Timeout: the request was not received in time' }],
  // The request line and headers over Node's limit (16 KiB): RFC 6585 §5.
  ['HPE_HEADER_OVERFLOW', { statusCode: 431, message: 'Request Header Fields Too Large' }],
  ['HPE_CHUNK_EXTENSIONS_OVERFLOW', { statusCode: 413, message: 'Request chunk extensions are too large' }],
])

/**
 * A request line (RFC 9112 §3) whose method is a token the parser does not know.
 * RFC 9110 §9.1 suggests 501; it is 400, as client input never gets a 5xx
 * (openapi.yaml, "Errors"). llhttp reports any unknown first word as
 * `HPE_INVALID_METHOD`; only a request line gets this message.
 */
const UNKNOWN_METHOD = { statusCode: 400, message: 'Bad Request: the request method is not one the service knows' }
const requestLine = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \r\n]+ HTTP\/\d\.\d\r?\n/

/** Any other parser error; what llhttp found is logged (`code`), not sent. */
const MALFORMED = { statusCode: 400, message: 'Bad Request: the request is not valid HTTP/1.1' }

/** An error of Node's HTTP parser or server (node:http `clientError`). */
interface ClientError {
  code: string
  /** The bytes the parser had read (Node's `clientError`). */
  rawPacket?: Buffer
}

/** The status and message of a request Node's HTTP parser rejected. */
function clientErrorResponse(error: ClientError): { statusCode: number; message: string } {
  if (error.code === 'HPE_INVALID_METHOD') return requestLine.test(`${error.rawPacket}`) ? UNKNOWN_METHOD : MALFORMED
  return CLIENT_ERRORS.get(error.code) ?? MALFORMED
}

function isClientError(error: unknown): error is ClientError {
  const code = (error as Partial<ClientError> | undefined)?.code
  return typeof code === 'string' && (CLIENT_ERRORS.has(code) || code.startsWith('HPE_'))
}

/**
 * Maps any error to its status, headers and `Error` body.
 *
 * - {@link HttpError}: its own status, message and headers.
 * - glue's SecurityError: the first {@link HttpError} a security handler threw.
 * - Fastify's and its plugins' client errors (validation 400, 413 body too large,
 *   415 media type, 429 rate limit, 400 malformed URL): their status and message.
 * - Node's HTTP parser errors and request timeouts: see {@link CLIENT_ERRORS}.
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
  if (isClientError(error)) {
    const { statusCode, message } = clientErrorResponse(error)
    return { statusCode, headers: {}, body: { error: statusCode, message }, internal: false }
  }
  const fastifyError = (error ?? {}) as Partial<FastifyError>
  const statusCode = fastifyError.statusCode
  // Client errors of Fastify and its plugins.
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    const message = statusCode === 415 ? UNSUPPORTED_MEDIA_TYPE : (fastifyError.message as string)
    return { statusCode, headers: {}, body: { error: statusCode, message }, internal: false }
  }
  return { statusCode: 500, headers: {}, body: { error: 500, message: 'Internal Server Error' }, internal: true }
}

/**
 * Fastify error handler: the single place where errors become responses, none of
 * them cached (`no-store`). Internal failures are logged with their cause; client
 * errors at `info`.
 */
export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const response = toErrorResponse(error)
  if (response.internal) {
    request.log.error({ err: error }, 'request failed')
  } else {
    request.log.info({ statusCode: response.statusCode, reason: response.body.message }, 'request rejected')
  }
  return reply.code(response.statusCode).header('cache-control', 'no-store').headers(response.headers).send(response.body)
}

/** Not-found handler: 404 with the `Error` body. */
export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply
    .code(404)
    .header('cache-control', 'no-store')
    .send({ error: 404, message: `Route ${request.method} ${request.url.split('?')[0]} not found` })
}

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without a Host header is 400. Node's own check
 * answers it without a body, so the application turns it off (`requireHostHeader:
 * false`) and runs this in its first `onRequest` hook.
 * @throws {HttpError} 400 when the header is missing.
 */
export function requireHost(request: FastifyRequest): void {
  if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
    throw new HttpError(400, 'Bad Request: an HTTP/1.1 request needs a Host header (RFC 9112 §3.2)')
  }
}

/**
 * Fastify `frameworkErrors`: a request Fastify's router rejects before any route or
 * hook runs, e.g. a malformed percent-encoding in the path (FST_ERR_BAD_URL, 400),
 * answered by {@link errorHandler} with the request id the hooks would have set.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  errorHandler(error, request, reply.header('x-request-id', request.id))
}

/**
 * Fastify `clientErrorHandler` (node:http `clientError`): a request Node's HTTP parser
 * rejected, or one not received within the timeouts, is answered with the `Error`
 * body, a new `X-Request-Id` and `Connection: close`, then the connection is closed,
 * as Node does. Nothing is written when the peer is gone, or when a response has
 * already begun on the connection (it would be corrupted).
 *
 * @param this - the Fastify instance (its logger).
 * @param error - the parser's or server's error (`code`: `HPE_*`, `ERR_HTTP_REQUEST_TIMEOUT`, `ECONNRESET`, …).
 * @param socket - the client's connection; destroyed on return.
 */
export function clientErrorHandler(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent: boolean } | null })._httpMessage
  if (socket.writable && inFlight?.headersSent !== true) {
    const { statusCode, body, internal } = toErrorResponse(error)
    const requestId = randomUUID()
    if (internal) {
      this.log.error({ requestId, err: error }, 'connection failed')
    } else {
      this.log.info({ requestId, statusCode, reason: body.message, code: error.code }, 'request rejected')
    }
    const payload = JSON.stringify(body)
    socket.write(
      `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(payload)}\r\ncache-control: no-store\r\nx-request-id: ${requestId}\r\n` +
        `connection: close\r\n\r\n${payload}`,
    )
  }
  socket.destroy()
}
