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
  logger.info({ req: { headers: { authorization: 'Bearer secret-token-0123456789', cookie: 'session=s3cret' } } }, 'incoming')
  t.notMatch(JSON.stringify(lines), /secret-token|s3cret/)
  t.match(lines, [{ msg: 'incoming', req: { headers: { authorization: '[redacted]', cookie: '[redacted]' } } }])
})
