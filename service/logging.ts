/**
 * Logging (pino): JSON lines, pretty only on a terminal, one line per request carrying its id and the client's address
 * (docs/operations.md, "Logs"); the rate limits key on the same address.
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { isIP, isIPv4, type Socket } from 'node:net'
import { normalizeIP } from '@fastify/rate-limit'
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import { type DestinationStream, destination, type LoggerOptions } from 'pino'

const requestIdPattern = /^[\w\-.:]{1,128}$/

/** Fastify's `genReqId`: the client's `X-Request-Id` when it is a plain token, else a new UUID. */
export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && requestIdPattern.test(given) ? given : randomUUID()
}

/** The client address logged and rate-limited by when the socket no longer tells it. */
export const UNKNOWN_ADDRESS = 'unknown'

/** Reads the peer's address on `connection`: Node caches it, and unread it is `undefined` once the peer is gone. */
export function rememberPeer(socket: Socket): void {
  void socket.remoteAddress
}

/**
 * The last trusted hop before any non-IP entry (so `X-Forwarded-For` text is no new rate-limit key),
 * normalised per RFC 5952.
 */
export function clientAddress(request: FastifyRequest): string {
  const hops = request.ips ?? [request.ip]
  let address = hops[0]
  for (const hop of hops.slice(1)) {
    if (isIP(hop) === 0) break
    address = hop
  }
  if (address === undefined || isIP(address) === 0) return UNKNOWN_ADDRESS
  return isIPv4(address) ? address : normalizeIP(address, 128)
}

/**
 * A logged object's credentials, at its top level and in a logged error (`{ err: { headers } }`). Named paths, no
 * `*`: pino redacts a line's keys that a path names, and a leading `*` names every key of every line.
 */
const REDACTED_PATHS = ['headers.authorization', 'headers.cookie', 'err.headers.authorization', 'err.headers.cookie']

/** Query values redacted, by {@link redactQuery}. */
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

/** No headers, so no `Set-Cookie` reaches a log. */
function replySerializer(reply: { statusCode: number }) {
  return { statusCode: reply.statusCode }
}

/**
 * A query string (without `?`) with its values redacted, for logs and traces: a query may carry a credential
 * (`?access_token=`, RFC 6750 §2.3). A bare component (`?<token>`) is redacted whole: it may be the value itself.
 */
export function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) =>
      pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=[redacted]` : pair === '' ? pair : '[redacted]',
    )
    .join('&')
}

/**
 * pino's options: `level` (pino's names), secrets redacted, the request and reply serializers; `pretty` through
 * pino-pretty.
 */
export function loggerOptions(level: string, pretty: boolean): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { req: requestSerializer, res: replySerializer },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  }
}

const LOG_BUFFER_BYTES = 4096
const LOG_FLUSH_INTERVAL_MS = 1000

/**
 * Pretty lines on a terminal; else JSON lines to stdout in synchronous writes of at least
 * 4 KiB, flushed every second and at exit. Synchronous: a slow log reader holds the
 * service instead of growing its memory (docs/operations.md, "Logs").
 */
export function processLogging(
  level: string,
  terminal: boolean,
): { options: LoggerOptions & { stream?: DestinationStream }; flush: () => void } {
  if (terminal) return { options: loggerOptions(level, true), flush: () => {} }
  const stdout = destination({ dest: 1, minLength: LOG_BUFFER_BYTES, sync: true })
  setInterval(() => stdout.flush(), LOG_FLUSH_INTERVAL_MS).unref()
  // pino flushes at exit only a destination with sync: false.
  process.once('exit', () => stdout.flushSync())
  return { options: { ...loggerOptions(level, false), stream: stdout }, flush: () => stdout.flush() }
}

/**
 * One line per request instead of Fastify's two (`responseTime` in ms, to the microsecond): the gateway writes its own
 * access line.
 */
export class RequestLogController extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'requestId' })
  }

  /** Nothing: the line is written once the request completes. */
  override incomingRequest(): void {}

  /** `request completed` at info, or `request errored` at error with the error. */
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // The digits past the microsecond are the clock's noise: up to 16 of them on every line.
    const responseTime = Math.round(reply.elapsedTime * 1000) / 1000
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime }, 'request errored')
    else reply.log.info({ req: request, res: reply, responseTime }, 'request completed')
  }
}
