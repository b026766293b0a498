/**
 * Units below the app: logger options (redaction, pretty only on a terminal) and
 * the changes made to the contract's routes.
 */
import { Writable } from 'node:stream'
import type { RouteOptions } from 'fastify'
import { pino } from 'pino'
import t from 'tap'
import { authenticateFirst, requireBody } from '../service/contract-routes.js'
import { loggerOptions } from '../service/logging.js'

t.test('logs are JSON with credentials redacted; pretty only on a terminal', async (t) => {
  t.equal(loggerOptions('info', false).transport, undefined)
  t.match(loggerOptions('debug', true), { level: 'debug', transport: { target: 'pino-pretty' } })
  let written = ''
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written += chunk.toString()
      done()
    },
  })
  const logger = pino(loggerOptions('info', false), sink)
  logger.info({ req: { headers: { authorization: 'Bearer secret-token-0123456789', cookie: 'session=s3cret' } } }, 'incoming')
  t.notMatch(written, /secret-token|s3cret/)
  t.match(JSON.parse(written), { msg: 'incoming', req: { headers: { authorization: '[redacted]', cookie: '[redacted]' } } })
})

t.test('a contract route without security or body is left as glue built it', async (t) => {
  const handler = async () => 'ok'
  const route = { method: 'GET', url: '/open', handler, schema: {} } as RouteOptions
  authenticateFirst(route, { limitToken: undefined, countFailedAuthentication: undefined })
  requireBody(route)
  t.equal(route.onRequest, undefined)
  t.equal(route.preValidation, undefined)
})

t.test('security moves to onRequest, after existing hooks and before the rate limit', async (t) => {
  const existing = async () => {}
  const security = async () => {}
  const limit = async () => {}
  const route = { method: 'POST', url: '/x', handler: existing, onRequest: existing, preHandler: security } as RouteOptions
  authenticateFirst(route, { limitToken: limit, countFailedAuthentication: undefined })
  t.same(route.onRequest, [existing, security, limit])
  t.equal(route.preHandler, undefined)
})
