/**
 * Logging (pino, through Fastify): JSON lines, pretty only on a terminal (docs/operations.md, "Logs").
 * @module
 */
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import { type DestinationStream, destination, type LoggerOptions } from 'pino'
import { clientAddress } from './client-address.js'

/** Where credentials could appear in a logged object; replaced by `[redacted]`. */
const REDACTED_PATHS = ['headers.authorization', 'headers.cookie', 'res.headers["set-cookie"]']

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

function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => (pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=[redacted]` : pair))
    .join('&')
}

/** pino options, credentials redacted; `pretty` (pino-pretty) for a terminal. */
export function loggerOptions(level: string, pretty: boolean): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { req: requestSerializer },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  }
}

/** Bytes of log lines gathered before one write to stdout. */
const LOG_BUFFER_BYTES = 4096
/** Longest a log line waits in the buffer, ms. */
const LOG_FLUSH_INTERVAL_MS = 1000

/**
 * Stdout off a terminal, buffered: a `write(2)` per line showed in the profile
 * (docs/benchmarks.md); SIGKILL loses at most the last second. `flush`, not `flushSync`,
 * which retries a failed write forever: a vanished reader (EPIPE) would hang the process.
 */
function bufferedStdout(): ReturnType<typeof destination> {
  const stdout = destination({ dest: 1, minLength: LOG_BUFFER_BYTES, sync: true })
  setInterval(() => stdout.flush(), LOG_FLUSH_INTERVAL_MS).unref()
  process.once('exit', () => stdout.flush())
  return stdout
}

/** Pretty lines on a terminal, else JSON lines through {@link bufferedStdout}; `flush` writes what is gathered. */
export function processLogging(level: string, terminal: boolean): { options: LoggerOptions & { stream?: DestinationStream }; flush: () => void } {
  if (terminal) return { options: loggerOptions(level, true), flush: () => {} }
  const stdout = bufferedStdout()
  return { options: { ...loggerOptions(level, false), stream: stdout }, flush: () => stdout.flush() }
}

/**
 * One line per request, `request completed` (`req`, `res.statusCode`, `responseTime` in
 * ms), instead of Fastify's two: the gateway writes its own access line, and the second
 * line's CPU showed in the profile (docs/benchmarks.md).
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
