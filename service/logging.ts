/**
 * Logger options (pino, through Fastify): JSON lines, one per event, each line of a
 * request carrying its `requestId`; human-readable only on a terminal.
 *
 * @module
 */
import type { LoggerOptions } from 'pino'

/** Where credentials could appear in a logged object; replaced by `[redacted]`. */
const REDACTED_PATHS = ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'res.headers["set-cookie"]']

/**
 * @param level - pino level (`LOG_LEVEL`).
 * @param pretty - format for a person (pino-pretty); pass whether stdout is a TTY.
 * @returns pino options with credentials redacted.
 */
export function loggerOptions(level: string, pretty: boolean): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  }
}
