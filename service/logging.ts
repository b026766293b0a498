/**
 * Logging (pino, through Fastify): JSON lines, pretty only on a terminal (docs/operations.md, "Logs").
 * @module
 */
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import { type DestinationStream, destination, type LoggerOptions } from 'pino'
import { clientAddress } from './client-address.js'

/**
 * Where credentials could appear in a logged object; replaced by `[redacted]`. A reply needs
 * no path: {@link replySerializer} logs none of its headers, and a path under `res` would
 * make pino's redaction copy every request line's `res` (cost in docs/benchmarks.md).
 */
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

/**
 * `responseTime` (ms) still written as a JSON number, but by `JSON.stringify`, which unwraps a
 * Number object (ECMA-262, SerializeJSONProperty) and writes the digits into its own output.
 * pino concatenates a plain number, and V8 keeps that text in its number-to-string cache, in
 * the old generation: garbage on every request until a mark-compact (docs/benchmarks.md).
 */
function durationSerializer(milliseconds: number): object {
  return new Number(milliseconds)
}

/** pino options, credentials redacted; `pretty` (pino-pretty) for a terminal. */
export function loggerOptions(level: string, pretty: boolean): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { req: requestSerializer, res: replySerializer, responseTime: durationSerializer },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  }
}

/** Characters of log lines gathered before one write to stdout. */
const LOG_BUFFER_LENGTH = 16384
/** Longest a log line waits in the buffer, ms. */
const LOG_FLUSH_INTERVAL_MS = 1000

/**
 * Log lines gathered into one write of at least `minLength` characters to `sink`. sonic-boom's own
 * `minLength` measures its whole pending buffer on every line (cost in docs/benchmarks.md).
 */
export class LineBatch {
  private lines: string[] = []
  private length = 0

  constructor(
    private readonly sink: { write(chunk: string): unknown },
    private readonly minLength: number,
  ) {}

  write(line: string): void {
    this.lines.push(line)
    this.length += line.length
    if (this.length >= this.minLength) this.flush()
  }

  /** Writes what is gathered, then calls `done` (pino's `flush(cb)`). */
  flush(done?: () => void): void {
    if (this.lines.length > 0) {
      const chunk = this.lines.join('')
      this.lines = []
      this.length = 0
      this.sink.write(chunk)
    }
    done?.()
  }
}

/**
 * Stdout off a terminal, in {@link LineBatch}es: a `write(2)` per line showed in the profile;
 * SIGKILL loses at most the last second. pino's destination stops writing once the reader is gone (EPIPE).
 * fd 1 must stay blocking, so nothing creates `process.stdout`: on a full non-blocking pipe,
 * sonic-boom's synchronous write sleeps 100 ms (its EAGAIN retry), and every request waits.
 */
function bufferedStdout(): LineBatch {
  const stdout = new LineBatch(destination({ dest: 1, sync: true }), LOG_BUFFER_LENGTH)
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
