/**
 * Unit tests of the logger options (service/logging.ts): JSON lines with credentials
 * redacted, pretty output only on a terminal.
 *
 * @module
 */
import { pino } from 'pino'
import t from 'tap'
import { loggerOptions } from '../../service/logging.js'
import { logSink } from '../helpers/app.js'

t.test('logs are JSON with credentials redacted; pretty only on a terminal', async (t) => {
  t.equal(loggerOptions('info', false).transport, undefined)
  t.match(loggerOptions('debug', true), { level: 'debug', transport: { target: 'pino-pretty' } })
  const { stream, lines } = logSink()
  const logger = pino(loggerOptions('info', false), stream)
  logger.info({ headers: { authorization: 'Bearer secret-token-0123456789', cookie: 'session=s3cret' } }, 'headers')
  const request = { method: 'POST', host: 'plants.example', ip: '192.0.2.1', socket: { remotePort: 4711 }, headers: { authorization: 'Bearer secret-token-0123456789' } }
  logger.info({ req: { ...request, url: '/plants?access_token=secret-token-0123456789&debug&x=s3cret' } }, 'incoming request')
  logger.info({ req: { ...request, url: '/plants' } }, 'incoming request')
  t.notMatch(JSON.stringify(lines), /secret-token|s3cret/)
  t.match(lines, [
    { msg: 'headers', headers: { authorization: '[redacted]', cookie: '[redacted]' } },
    { req: { method: 'POST', url: '/plants?access_token=[redacted]&debug&x=[redacted]', host: 'plants.example', remoteAddress: '192.0.2.1', remotePort: 4711 } },
    { req: { url: '/plants' } },
  ])
  t.equal((lines[1]!.req as Record<string, unknown>).headers, undefined, 'a request is logged without its headers')
})
