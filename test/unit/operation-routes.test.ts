/**
 * Unit tests of the changes made to the contract's routes (service/operation-routes.ts):
 * authentication moved before the body, and 405 for the methods a path has no
 * operation for, on a bare Fastify instance.
 *
 * @module
 */
import Fastify, { type RouteOptions } from 'fastify'
import t from 'tap'
import { addMethodNotAllowed, authenticateFirst, requireBody } from '../../service/operation-routes.js'
import { errorHandler } from '../../service/errors.js'

t.test('a contract route without security or body is left as glue built it', async (t) => {
  const handler = async () => 'ok'
  const route = { method: 'GET', url: '/open', handler, schema: {} } as RouteOptions
  authenticateFirst(route, { limitToken: undefined, countFailedAuthentication: undefined })
  requireBody(route)
  t.equal(route.onRequest, undefined)
  t.equal(route.preValidation, undefined)
})

t.test('security moves to onRequest, after existing hooks and before the rate limit and 100 Continue', async (t) => {
  const existing = async () => {}
  const security = async () => {}
  const limit = async () => {}
  const route = { method: 'POST', url: '/x', handler: existing, onRequest: existing, preHandler: security } as RouteOptions
  authenticateFirst(route, { limitToken: limit, countFailedAuthentication: undefined })
  t.same((route.onRequest as unknown[]).slice(0, 3), [existing, security, limit])
  t.equal((route.onRequest as Array<{ name: string }>)[3]!.name, 'inviteBody', 'then 100 Continue, last')
  t.equal(route.preHandler, undefined)
})

t.test('405 for every method a contract path has no operation for, Allow listing those it has; HEAD goes with GET', async (t) => {
  const app = Fastify()
  app.setErrorHandler(errorHandler)
  const operation = (operationId: string) => ({ operationId, responses: {} })
  addMethodNotAllowed(app, {
    openapi: '3.1.0',
    info: { title: 'routes', version: '1' },
    paths: { '/things/{id}': { get: operation('getThing'), delete: operation('deleteThing'), summary: 'not a method' } },
  })
  for (const method of ['POST', 'PUT', 'PATCH', 'OPTIONS'] as const) {
    const response = await app.inject({ method, url: '/things/7' })
    t.equal(response.statusCode, 405, method)
    t.equal(response.headers.allow, 'DELETE, GET, HEAD')
    t.strictSame(response.json(), { error: 405, message: 'Method not allowed; /things/{id} allows DELETE, GET, HEAD' })
  }
  for (const method of ['GET', 'HEAD', 'DELETE'] as const) {
    t.equal((await app.inject({ method, url: '/things/7' })).statusCode, 404, `${method}: left to the operation's route`)
  }
})
