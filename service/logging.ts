/**
 * Logging (pino, through Fastify): JSON lines, pretty only on a terminal (docs/operations.md, "Logs").
 * @module
 */
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import { type DestinationStream, destination, type LoggerOptions } from 'pino'
import { clientAddress } from './client-address.js'

/** Where credentials could appear in a logged object; replaced by `[redacted]`. A reply logs none of its headers ({@link replySerializer}). */
const REDACTED_PATHS = ['headers.authorization', 'headers.cookie']

/** The request as Fastify logs it, query values redacted: a query may carry a credential (`?access_token=`). */
function requestSerializer(request: FastifyRequest) {
  const query = request.url.indexOf('?')
  return {
    method: request.method,
    url: query === -1 ? request.url : `${request.url.slice(0, query)}?${redactQuery(request.url.slice(query + 1))}`,
    host: request.host,
    remoteAddress: clientAddress(request),
    remotePort: request.socket?.remotePort,
  }
}

/** A reply as logged: its status code only, so no response header (`Set-Cookie`) reaches a log. */
function replySerializer(reply: { statusCode: number }) {
  return { statusCode: reply.statusCode }
}

/** Every value redacted, and a bare component (`?<token>`) whole: it may be the value itself. */
function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => (pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=[redacted]` : pair === '' ? pair : '[redacted]'))
    .join('&')
}

/** pino options, credentials redacted; `pretty` (pino-pretty) for a terminal. */
export function loggerOptions(level: string, pretty: boolean): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { req: requestSerializer, res: replySerializer },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  }
}

/** Bytes of log lines sonic-boom gathers before one write to stdout. */
const LOG_BUFFER_BYTES = 4096
/** Longest a log line waits in that buffer, ms. */
const LOG_FLUSH_INTERVAL_MS = 1000

/**
 * Pretty lines on a terminal (a pino-pretty worker); else JSON lines to stdout through pino's
 * buffered destination, flushed every second and at exit (pino's own exit handler).
 */
export function processLogging(level: string, terminal: boolean): { options: LoggerOptions & { stream?: DestinationStream }; flush: () => void } {
  if (terminal) return { options: loggerOptions(level, true), flush: () => {} }
  const stdout = destination({ dest: 1, minLength: LOG_BUFFER_BYTES, sync: false })
  setInterval(() => stdout.flush(), LOG_FLUSH_INTERVAL_MS).unref()
  return { options: { ...loggerOptions(level, false), stream: stdout }, flush: () => stdout.flush() }
}

/**
 * One line per request, `request completed` (`req`, `res.statusCode`, `responseTime` in
 * ms), instead of Fastify's two: the gateway writes its own access line.
 */
export class RequestLogController extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'requestId' })
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored')
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed')
  }
}
