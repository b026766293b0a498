/** Typed HTTP errors; the one place any failure (route, router, Node's HTTP parser) becomes the contract's `Error` body. @module */
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { components } from './generated/openapi.ts'
import { StoreUnavailableError } from './store/plant-repository.ts'

/** An error with its HTTP status and headers (`WWW-Authenticate`, `Retry-After`, `Allow`). */
export class HttpError extends Error {
  readonly statusCode: number
  readonly headers: Readonly<Record<string, string>>

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

/** 503, nothing stored; `Retry-After` in seconds (RFC 9110 §10.2.3), as openapi.yaml declares. */
export class ServiceUnavailableError extends HttpError {
  constructor(message: string) {
    super(503, message, { 'retry-after': '1' })
  }
}

/** Message of every 415: the one media type the contract declares (RFC 9110 §15.5.16). */
export const UNSUPPORTED_MEDIA_TYPE = 'Unsupported Media Type: send the body as application/json'

/** The answer to CONNECT (RFC 9110 §9.3.6). */
export const CONNECT_REFUSED = 'Bad Request: CONNECT asks for a tunnel, which the service does not open'

type ErrorBody = components['schemas']['Error']

/** Node's own rejections by error code, statuses as in Node's lib/_http_server.js; any other `HPE_*` is 400. */
const CLIENT_ERRORS: ReadonlyMap<string, { statusCode: number; message: string }> = new Map([
  ['ERR_HTTP_REQUEST_TIMEOUT', { statusCode: 408, message: 'Request Timeout: the request was not received in time' }],
  ['HPE_HEADER_OVERFLOW', { statusCode: 431, message: 'Request Header Fields Too Large' }],
  ['HPE_CHUNK_EXTENSIONS_OVERFLOW', { statusCode: 413, message: 'Request chunk extensions are too large' }],
])

/** An unknown method (RFC 9112 §3): 400, not 501, as client input never gets a 5xx (openapi.yaml, "Errors"). */
const UNKNOWN_METHOD = { statusCode: 400, message: 'Bad Request: the request method is not one the service knows' }
const requestLine = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \r\n]+ HTTP\/\d\.\d\r?\n/

const MALFORMED = { statusCode: 400, message: 'Bad Request: the request is not valid HTTP/1.1' }

interface ClientError {
  code: string
  rawPacket?: Buffer
}

function clientErrorResponse(error: ClientError): { statusCode: number; message: string } {
  if (error.code === 'HPE_INVALID_METHOD') return requestLine.test(`${error.rawPacket}`) ? UNKNOWN_METHOD : MALFORMED
  return CLIENT_ERRORS.get(error.code) ?? MALFORMED
}

function isClientError(error: unknown): error is ClientError {
  const code = (error as Partial<ClientError> | undefined)?.code
  return typeof code === 'string' && (CLIENT_ERRORS.has(code) || code.startsWith('HPE_'))
}

/** Any error as its status, headers and `Error` body; an unknown one is a 500 whose cause is only logged (`internal`). */
export function toErrorResponse(error: unknown): {
  statusCode: number
  headers: Readonly<Record<string, string>>
  body: ErrorBody
  internal: boolean
} {
  if (error instanceof HttpError) {
    return {
      statusCode: error.statusCode,
      headers: error.headers,
      body: { error: error.statusCode, message: error.message },
      internal: false,
    }
  }
  // Any operation's: nothing stored (openapi.yaml, responses.ServiceUnavailable).
  if (error instanceof StoreUnavailableError)
    return toErrorResponse(new ServiceUnavailableError('The store is unavailable; retry later'))
  if (isClientError(error)) {
    const { statusCode, message } = clientErrorResponse(error)
    return { statusCode, headers: {}, body: { error: statusCode, message }, internal: false }
  }
  const fastifyError = (error ?? {}) as Partial<FastifyError>
  const statusCode = fastifyError.statusCode
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    const message = statusCode === 415 ? UNSUPPORTED_MEDIA_TYPE : (fastifyError.message as string)
    return { statusCode, headers: {}, body: { error: statusCode, message }, internal: false }
  }
  return { statusCode: 500, headers: {}, body: { error: 500, message: 'Internal Server Error' }, internal: true }
}

/** Closes (RFC 9112 §9.6) when no operation accepted the request or its body is unread, so it holds no `MAX_CONNECTIONS` place. */
function closeIfUnaccepted(request: FastifyRequest, reply: FastifyReply, statusCode: number): FastifyReply {
  if (statusCode === 401 || statusCode === 404 || statusCode === 405 || !request.raw.complete)
    reply.header('connection', 'close')
  return reply
}

/** Fastify's error handler, never cached: internal failures logged with their cause, client errors at `info`. */
export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const response = toErrorResponse(error)
  if (response.internal) {
    request.log.error({ err: error }, 'request failed')
  } else {
    request.log.info({ statusCode: response.statusCode, reason: response.body.message }, 'request rejected')
  }
  return closeIfUnaccepted(request, reply, response.statusCode)
    .code(response.statusCode)
    .header('cache-control', 'no-store')
    .headers(response.headers)
    .send(response.body)
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return closeIfUnaccepted(request, reply, 404)
    .code(404)
    .header('cache-control', 'no-store')
    .send({ error: 404, message: `Route ${request.method} ${request.url.split('?')[0]} not found` })
}

/** @throws {HttpError} 400 for an HTTP/1.1 request without Host (RFC 9112 §3.2); Node's own check sends no body. */
export function requireHost(request: FastifyRequest): void {
  if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
    throw new HttpError(400, 'Bad Request: an HTTP/1.1 request needs a Host header (RFC 9112 §3.2)')
  }
}

/** Fastify's `frameworkErrors` (router rejections): the request id, then {@link errorHandler}. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  errorHandler(error, request, reply.header('x-request-id', request.id))
}

/** Fastify's `clientErrorHandler`: the `Error` body, then close; nothing written once a response has begun (it would corrupt it). */
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
