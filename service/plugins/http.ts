/** HTTP before any route: connection limits, the request id, request-line checks, JSON-only bodies, the error handler. @module */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import fp from 'fastify-plugin'
import { rememberPeer } from '../client-address.ts'
import type { Config } from '../config.ts'
import {
  CONNECT_REFUSED,
  clientErrorHandler,
  errorHandler,
  HttpError,
  notFoundHandler,
  requireHost,
} from '../errors.ts'
import { parseJsonBody, requireUtf8 } from '../json-body.ts'
import { refuseTokenInQuery } from '../operations/security.ts'

const requestIdPattern = /^[\w\-.:]{1,128}$/

/** Fastify's `genReqId`: the client's `X-Request-Id` when it is a plain token, else a new UUID. */
export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && requestIdPattern.test(given) ? given : randomUUID()
}

function identifyRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  reply.header('x-request-id', request.id)
  requireHost(request)
  refuseTokenInQuery(request)
  done()
}

async function http(app: FastifyInstance, config: Pick<Config, 'headersTimeoutMs' | 'maxConnections'>): Promise<void> {
  const server = app.server
  server.headersTimeout = config.headersTimeoutMs
  // Refuse connections before the store or the pool runs out of file descriptors.
  server.maxConnections = config.maxConnections
  server.on('connection', rememberPeer)
  // Other expectations are ignored (RFC 9110 §10.1.1); Node would answer 417 without a body.
  server.on('checkExpectation', (request, response) => server.emit('request', request, response))
  // 100 Continue only once authenticated (operations/routes.ts); Node would send it at once.
  server.on('checkContinue', (request, response) => server.emit('request', request, response))
  // Node would close without an answer.
  server.on('connect', (_request, socket: Socket) =>
    clientErrorHandler.call(app, new HttpError(400, CONNECT_REFUSED), socket),
  )

  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)
  app.addHook('onRequest', identifyRequest)

  // Any other media type, or a body without one, is 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      // A parser runs only for a request with a Content-Type.
      requireUtf8(request.headers['content-type'] as string)
      done(null, parseJsonBody(body as Buffer))
    } catch (error) {
      done(error as Error)
    }
  })
}

export default fp(http, { name: 'http' })
