/**
 * Unit tests of the route options each operation gets from the contract
 * (service/operations/routes.ts): security requirements, required bodies, and 405 for the
 * methods a path has no operation for, on a bare Fastify instance.
 *
 * @module
 */
import Fastify from 'fastify'
import t from 'tap'
import type { OpenApiDocument } from '../../service/contract.ts'
import { errorHandler, HttpError } from '../../service/errors.ts'
import { addMethodNotAllowed, authentication, requiredBody } from '../../service/operations/routes.ts'

const contract = (security?: OpenApiDocument['security']): OpenApiDocument => ({
  openapi: '3.1.0',
  info: { title: 'x', version: '1' },
  paths: {},
  security,
})
const refuse = (status: number) => async () => {
  throw new HttpError(status, `refused ${status}`)
}
const noLimits = { limitToken: undefined, countFailedAuthentication: undefined }

/** An app with one POST route guarded by `authentication(...)`. */
async function guarded(hooks: ReturnType<typeof authentication>) {
  const app = Fastify()
  app.setErrorHandler(errorHandler)
  app.post('/x', { onRequest: hooks }, async () => ({ ok: true }))
  return app
}

t.test(
  'an operation passes when every scheme of one requirement accepts it; the first failure is answered',
  async (t) => {
    const accept = async () => {}
    const hooks = authentication(
      contract([{ a: [], b: [] }, { c: [] }]),
      { operationId: 'op', responses: {} },
      { a: accept, b: refuse(401), c: refuse(403) },
      noLimits,
    )
    t.equal(
      (await (await guarded(hooks)).inject({ method: 'POST', url: '/x' })).statusCode,
      401,
      'neither requirement is met: the first failure',
    )
    const either = authentication(
      contract([{ a: [], b: [] }, { c: [] }]),
      { operationId: 'op', responses: {} },
      { a: accept, b: refuse(401), c: accept },
      noLimits,
    )
    t.equal(
      (await (await guarded(either)).inject({ method: 'POST', url: '/x' })).statusCode,
      200,
      'the second requirement is met',
    )
  },
)

t.test('no requirement, or an empty one, makes an operation public; an unknown scheme fails at start-up', async (t) => {
  for (const security of [undefined, [], [{}, { a: [] }]] as Array<OpenApiDocument['security']>) {
    const hooks = authentication(contract(security), { operationId: 'op', responses: {} }, { a: refuse(401) }, noLimits)
    t.equal(
      (await (await guarded(hooks)).inject({ method: 'POST', url: '/x' })).statusCode,
      200,
      JSON.stringify(security),
    )
  }
  t.throws(
    () => authentication(contract([{ missing: [] }]), { operationId: 'op', responses: {} }, {}, noLimits),
    /No security handler for the scheme missing of op/,
  )
})

t.test('a required body is 415 when missing; an optional one is not checked', async (t) => {
  t.same(requiredBody({ responses: {} }), [])
  t.same(requiredBody({ responses: {}, requestBody: { content: {} } }), [])
  const app = Fastify()
  app.setErrorHandler(errorHandler)
  app.post(
    '/x',
    { preValidation: requiredBody({ responses: {}, requestBody: { required: true, content: {} } }) },
    async () => ({ ok: true }),
  )
  t.equal((await app.inject({ method: 'POST', url: '/x' })).statusCode, 415)
  t.equal((await app.inject({ method: 'POST', url: '/x', payload: { a: 1 } })).statusCode, 200)
})

t.test(
  '405 for every method a contract path has no operation for, Allow listing those it has; HEAD goes with GET',
  async (t) => {
    const app = Fastify()
    app.setErrorHandler(errorHandler)
    const operation = (operationId: string) => ({ operationId, responses: {} })
    addMethodNotAllowed(app, {
      openapi: '3.1.0',
      info: { title: 'routes', version: '1' },
      paths: {
        '/things/{id}': { get: operation('getThing'), delete: operation('deleteThing'), summary: 'not a method' },
      },
    })
    for (const method of ['POST', 'PUT', 'PATCH', 'OPTIONS'] as const) {
      const response = await app.inject({ method, url: '/things/7' })
      t.equal(response.statusCode, 405, method)
      t.equal(response.headers.allow, 'DELETE, GET, HEAD')
      t.strictSame(response.json(), {
        error: 405,
        message: 'Method not allowed; /things/{id} allows DELETE, GET, HEAD',
      })
    }
    for (const method of ['GET', 'HEAD', 'DELETE'] as const) {
      t.equal(
        (await app.inject({ method, url: '/things/7' })).statusCode,
        404,
        `${method}: left to the operation's route`,
      )
    }
  },
)
