/** strict-http: one error body for every failure, Host, `Expect`, CONNECT, 404/405, and bounded connections. @module */
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { guardConnections } from './connections.ts'
import { CONNECT_REFUSED, defaultErrorBody, type ErrorBody, HOST_REQUIRED, toErrorResponse } from './errors.ts'
import { httpError, observeRoutes } from './methods.ts'

export { CONNECT_REFUSED, defaultErrorBody, type ErrorBody, HOST_REQUIRED, toErrorResponse } from './errors.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Every later answer closes its connection (RFC 9112 §9.6), so clients move elsewhere; `close()` does too. */
    closeConnections(): void
  }
}

/** The connection policy's defaults, as README.md's "Options" table gives them. */
export const STRICT_HTTP_DEFAULTS = { maxPipelined: 16, lingerMs: 10_000, closeAfter: [401, 404, 405] } as const

/** The plugin's options (README.md, "Options"); each has a default. */
export interface StrictHttpOptions {
  /** The body of every error answer; default `{ statusCode, error, message }`. */
  errorBody?: ErrorBody
  /** Turns the app's own errors into ones carrying `statusCode` (and `headers`, `expose`) before the mapping. */
  mapError?: (error: unknown) => unknown
  /** Most open connections (`server.maxConnections`); default none. */
  maxConnections?: number
  /** Most unanswered requests on one connection. */
  maxPipelined?: number
  /** Most milliseconds a closing connection waits for the answers it owes. */
  lingerMs?: number
  /** Statuses after which the connection closes (an unread body always closes it). */
  closeAfter?: readonly number[]
  /** Header carrying the request id on every answer, `false` for none; default `x-request-id`. */
  requestIdHeader?: string | false
}

async function strictHttp(app: FastifyInstance, options: StrictHttpOptions): Promise<void> {
  const errorBody = options.errorBody ?? defaultErrorBody
  const closeAfter = new Set(options.closeAfter ?? STRICT_HTTP_DEFAULTS.closeAfter)
  const idHeader = options.requestIdHeader ?? 'x-request-id'
  const server = app.server
  const mapError = options.mapError ?? ((error: unknown) => error)

  function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const { statusCode, headers, message, internal } = toErrorResponse(mapError(error))
    if (internal) request.log.error({ err: error }, 'request failed')
    else request.log.info({ statusCode, reason: message }, 'request rejected')
    // RFC 9112 §9.6: no place in `maxConnections` for a request no route accepted, or an unread body.
    if (closeAfter.has(statusCode) || !request.raw.complete) reply.header('connection', 'close')
    if (idHeader !== false) reply.header(idHeader, request.id)
    return reply
      .code(statusCode)
      .header('cache-control', 'no-store')
      .headers(headers)
      .send(errorBody(statusCode, message))
  }

  function answerOnSocket(socket: Socket, error: Error & { code?: string }): void {
    const { statusCode, headers, message, internal } = toErrorResponse(mapError(error))
    const requestId = randomUUID()
    if (internal) app.log.error({ requestId, err: error }, 'connection failed')
    else app.log.info({ requestId, statusCode, reason: message, code: error.code }, 'request rejected')
    const payload = JSON.stringify(errorBody(statusCode, message))
    const lines = Object.entries({
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(payload)),
      'cache-control': 'no-store',
      ...(idHeader === false ? {} : { [idHeader]: requestId }),
      ...headers,
      connection: 'close',
    }).map(([name, value]) => `${name}: ${value}\r\n`)
    socket.write(`HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\n${lines.join('')}\r\n${payload}`)
  }

  const fail = guardConnections(
    server,
    {
      maxConnections: options.maxConnections ?? Infinity,
      maxPipelined: options.maxPipelined ?? STRICT_HTTP_DEFAULTS.maxPipelined,
      lingerMs: options.lingerMs ?? STRICT_HTTP_DEFAULTS.lingerMs,
    },
    answerOnSocket,
  )
  // Fastify's clientErrorHandler would answer without waiting for the answers ahead of the error.
  server.removeAllListeners('clientError')
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) => {
    // A reset peer hears nothing, and is not worth a log line.
    if (error.code === 'ECONNRESET' || socket.destroyed) socket.destroy()
    else fail(error, socket)
  })
  // Node would close without an answer.
  server.on('connect', (_request, socket: Socket) => fail(httpError(400, CONNECT_REFUSED), socket))
  // Other expectations are ignored (RFC 9110 §10.1.1); Node would answer 417 without a body.
  server.on('checkExpectation', (request, response) => server.emit('request', request, response))
  // Node would send 100 Continue at once, before any hook could refuse the request; the app sends it once it accepts.
  server.on('checkContinue', (request, response) => server.emit('request', request, response))

  let closing = false
  app.decorate('closeConnections', () => {
    closing = true
  })
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })

  const notFound = observeRoutes(app)
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(async (request) => {
    throw notFound(request)
  })
  app.addHook('onRequest', function strictHttp(request, reply, done) {
    if (idHeader !== false) reply.header(idHeader, request.id)
    if (closing) reply.header('connection', 'close')
    // Node's own Host check (`requireHostHeader`) answers without a body.
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') done(httpError(400, HOST_REQUIRED))
    // Before any body is read: no route takes it.
    else if (request.is404) done(notFound(request))
    else done()
  })
}

/**
 * Fastify's `frameworkErrors` option (a plugin cannot set it): the router's rejections (a malformed
 * percent-encoding, a too-long parameter) through the app's error handler, as any other failure.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void request.server.errorHandler(error, request, reply)
}

export default fp(strictHttp, { name: 'strict-http', fastify: '5.x' })
