/** service/logging.ts: JSON lines, credentials redacted, pretty only on a terminal, one line per request. */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { pino } from 'pino'
import t from 'tap'
import { loggerOptions, processLogging, RequestLogController } from '../../service/logging.ts'
import { logSink } from '../helpers/app.ts'

t.test('logs are JSON with credentials redacted; pretty only on a terminal', async (t) => {
  const pretty = { level: 'debug', transport: { target: 'pino-pretty' } }
  t.match(loggerOptions('debug', true), pretty)
  const [terminal, piped] = [processLogging('debug', true), processLogging('info', false)]
  t.match(terminal.options, { ...pretty, stream: undefined })
  t.match(piped.options.stream, { fd: 1, minLength: Number, sync: true }, "pino's buffered stdout")
  t.same([loggerOptions('info', false).transport, piped.options.transport], [undefined, undefined], 'JSON when piped')
  t.doesNotThrow(() => [terminal.flush(), piped.flush()])
  const { stream, lines } = logSink()
  const logger = pino(loggerOptions('info', false), stream)
  logger.info({ headers: { authorization: 'Bearer secret-token-0123456789', cookie: 'session=s3cret' } }, 'headers')
  logger.info({ err: { headers: { authorization: 'Bearer secret-token-0123456789', cookie: 's3cret' } } }, 'nested')
  const headers = { authorization: 'Bearer secret-token-0123456789' }
  const request = { method: 'POST', host: 'plants.example', ip: '192.0.2.1', socket: { remotePort: 4711 }, headers }
  logger.info(
    { req: { ...request, url: '/plants?access_token=secret-token-0123456789&secret-token-bare&&x=s3cret' } },
    'incoming request',
  )
  logger.info({ req: { ...request, url: '/plants' } }, 'incoming request')
  logger.info({ req: { ...request, url: '/plants', ip: undefined, socket: {} } }, 'after the peer left')
  t.notMatch(JSON.stringify(lines), /secret-token|s3cret/)
  t.match(lines, [
    { msg: 'headers', headers: { authorization: '[redacted]', cookie: '[redacted]' } },
    { msg: 'nested', err: { headers: { authorization: '[redacted]', cookie: '[redacted]' } } },
    {
      req: {
        method: 'POST',
        url: '/plants?access_token=[redacted]&[redacted]&&x=[redacted]',
        host: 'plants.example',
        remoteAddress: '192.0.2.1',
        remotePort: 4711,
      },
    },
    { req: { url: '/plants' } },
    { req: { remoteAddress: 'unknown' } },
  ])
  t.equal((lines[2]!.req as Record<string, unknown>).headers, undefined, 'a request is logged without its headers')
  const cookie = { 'set-cookie': 'session=s3cret' }
  logger.info({ res: { statusCode: 200, headers: cookie, getHeaders: () => cookie } }, 'reply')
  t.same(lines[5]!.res, { statusCode: 200 }, 'a reply is logged as its status code only')
})

t.test(
  'one line per request, when it ends: the request, its status and duration, at error level if the response failed',
  async (t) => {
    const { stream, lines } = logSink()
    const log = pino(loggerOptions('info', false), stream)
    const controller = new RequestLogController()
    const req = { method: 'POST', url: '/plants' }
    const request = {
      ...req,
      host: 'localhost',
      ip: '::1',
      socket: { remotePort: 1 },
      log,
    } as unknown as FastifyRequest
    const reply = { statusCode: 200, elapsedTime: 1.2345678, log } as unknown as FastifyReply
    controller.incomingRequest()
    t.same(lines, [], 'no line on arrival')
    controller.requestCompleted(null, request, reply)
    controller.requestCompleted(new Error('socket hang up'), request, reply)
    t.match(lines, [
      { level: 30, msg: 'request completed', req, res: { statusCode: 200 }, responseTime: 1.235 },
      { level: 50, msg: 'request errored', req, err: { message: 'socket hang up' }, responseTime: 1.235 },
    ])
    t.match(lines, Array(2).fill({ responseTime: Number }), 'responseTime is a JSON number')
  },
)
