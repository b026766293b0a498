/**
 * Logger options (pino, through Fastify): JSON lines, one per event, each line of a
 * request carrying its `requestId`; human-readable only on a terminal. A request
 * writes one line when it completes ({@link RequestLogController}), and errors
 * theirs as they happen.
 *
 * @module
 */
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import { type DestinationStream, destination, type LoggerOptions } from 'pino'
import { clientAddress } from './client-address.js'

/** Where credentials could appear in a logged object; replaced by `[redacted]`. */
const REDACTED_PATHS = ['headers.authorization', 'headers.cookie', 'res.headers["set-cookie"]']

/**
 * The request as Fastify logs it (no headers), with every query value replaced: a
 * query may carry a credential (`?access_token=`, which the service refuses but
 * still logs).
 */
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

/** `a=1&b` as `a=[redacted]&b`: names kept, values gone. */
function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => (pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=[redacted]` : pair))
    .join('&')
}

/**
 * @param level - pino level (`LOG_LEVEL`).
 * @param pretty - format for a person (pino-pretty); pass whether stdout is a TTY.
 * @returns pino options with credentials redacted.
 */
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
 * Stdout as the process logs to it when it is not a terminal: lines are gathered up
 * to {@link LOG_BUFFER_BYTES} and written in one synchronous `write(2)`, or after at
 * most {@link LOG_FLUSH_INTERVAL_MS}, and at exit. A write per line cost about a
 * tenth of a request's CPU (docs/benchmarks.md). A process killed with SIGKILL loses
 * at most the lines of the last second.
 */
function bufferedStdout(): ReturnType<typeof destination> {
  const stdout = destination({ dest: 1, minLength: LOG_BUFFER_BYTES, sync: true })
  setInterval(() => stdout.flushSync(), LOG_FLUSH_INTERVAL_MS).unref()
  process.once('exit', () => stdout.flushSync())
  return stdout
}

/**
 * The process's logging: pretty lines on a terminal; else JSON lines through
 * {@link bufferedStdout}.
 *
 * @param level - pino level (`LOG_LEVEL`).
 * @param terminal - whether stdout is a TTY.
 * @returns the logger options for Fastify, and `flush`, which writes what is
 *   gathered at once (a no-op on a terminal).
 */
export function processLogging(level: string, terminal: boolean): { options: LoggerOptions & { stream?: DestinationStream }; flush: () => void } {
  if (terminal) return { options: loggerOptions(level, true), flush: () => {} }
  const stdout = bufferedStdout()
  return { options: { ...loggerOptions(level, false), stream: stdout }, flush: () => stdout.flushSync() }
}

/**
 * Fastify's per-request logging with one line per request, `request completed`,
 * holding the request (`req`), its status (`res.statusCode`) and its duration
 * (`responseTime`, ms), instead of two (`incoming request` and `request completed`):
 * the gateway writes its own access line, and the second line cost more CPU than
 * the handler (docs/benchmarks.md). Errors are logged in full as before.
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
