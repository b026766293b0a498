/**
 * What the service adds to the routes glue builds from openapi.yaml's operations:
 * authentication before the body is read, a required body, and 405 for other methods.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler, RouteOptions } from 'fastify'
import type { OpenApiDocument } from './contract.js'
import { HttpError, UNSUPPORTED_MEDIA_TYPE } from './errors.js'
import type { RouteLimits } from './protection.js'

// Not `import … from 'node:http'`: see errors.ts.
const { METHODS } = process.getBuiltinModule('node:http')

/** Shapes the operations' routes as glue adds them (`onRoute`); call it before glue registers them. */
export function shapeOperationRoutes(app: FastifyInstance, contract: OpenApiDocument, limits: RouteLimits): void {
  app.addHook('onRoute', (route) => {
    if (route.schema?.operationId === undefined) return
    authenticateFirst(route, limits)
    requireBody(route)
  })
  addMethodNotAllowed(app, contract)
}

/**
 * 405 with `Allow` (RFC 9110 §15.5.6) for each method a contract path has no operation
 * for, before any body is read. Every method Node's parser knows is routed but CONNECT
 * (400, app.ts); HEAD is allowed where GET is, as Fastify answers it (RFC 9110 §9.3.2).
 */
export function addMethodNotAllowed(app: FastifyInstance, contract: OpenApiDocument): void {
  for (const method of METHODS) if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
  const methods = app.supportedMethods
  for (const [path, item = {}] of Object.entries(contract.paths)) {
    const operations = new Set(methods.filter((method) => (item as Record<string, { operationId?: string } | undefined>)[method.toLowerCase()]?.operationId !== undefined))
    if (operations.has('GET')) operations.add('HEAD')
    const allow = [...operations].sort().join(', ')
    // The hook answers; the handler, never reached, is the same function.
    const refuse = async (): Promise<never> => {
      throw new HttpError(405, `Method not allowed; ${path} allows ${allow}`, { allow })
    }
    app.route({
      method: methods.filter((method) => !operations.has(method)),
      url: path.replace(/{(\w+)}/g, ':$1'),
      schema: { hide: true },
      onRequest: refuse,
      handler: refuse,
    })
  }
}

/**
 * Moves glue's security handlers, which it runs as a `preHandler` after the body is
 * parsed and validated, to `onRequest`, so no unauthenticated body is parsed; they must
 * be async hooks (they are). A failure is counted against the client address first (429
 * past its budget, else the 401); the per-token limit, then `100 Continue`, come after a success only.
 */
export function authenticateFirst(route: RouteOptions, limits: RouteLimits): void {
  if (route.preHandler === undefined) return
  const checks = [route.preHandler].flat() as onRequestAsyncHookHandler[]
  const { countFailedAuthentication, limitToken } = limits
  const authenticate =
    countFailedAuthentication === undefined
      ? checks
      : [
          async function authenticate(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
            try {
              for (const check of checks) await check.call(this, request, reply)
            } catch (failure) {
              await countFailedAuthentication(request)
              throw failure
            }
          },
        ]
  route.onRequest = [...[route.onRequest ?? []].flat(), ...authenticate, ...(limitToken ? [limitToken] : []), inviteBody]
  route.preHandler = undefined
}

/** Sends `100 Continue` to a client that waits for it (RFC 9110 §10.1.1), once it is authenticated and within its limits. */
function inviteBody(request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
  if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue()
  done()
}

/**
 * 415 for a request without a body to an operation that has one: Fastify lets it through
 * without `Content-Type`, and glue does not enforce `requestBody.required`.
 */
export function requireBody(route: RouteOptions): void {
  const schema = route.schema as { body?: unknown }
  if (schema.body === undefined) return
  route.preValidation = [
    ...[route.preValidation ?? []].flat(),
    function refuseMissingBody(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
      done(request.body === undefined ? new HttpError(415, UNSUPPORTED_MEDIA_TYPE) : undefined)
    },
  ]
}
