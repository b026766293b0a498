/**
 * What the service adds to the routes fastify-openapi-glue builds from openapi.yaml
 * (the contract's routes are those with an `operationId`):
 *
 * - authentication before the body is read, with the failed-authentication and
 *   per-token limits around it ({@link authenticateFirst});
 * - a required request body ({@link requireBody});
 * - 405 with `Allow` for the other methods on a contract path ({@link addMethodNotAllowed}).
 *
 * @module
 */
import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler, RouteOptions } from 'fastify'
import type { OpenApiDocument } from './contract.js'
import { HttpError, UNSUPPORTED_MEDIA_TYPE } from './errors.js'
import type { RouteLimits } from './protection.js'

/**
 * Shapes the contract's routes; call it before glue registers them. Each route
 * glue adds with an `operationId` is changed as it is added (`onRoute`); the 405
 * routes are added at once, from the contract's paths.
 *
 * @param contract - the document glue builds the routes from.
 * @param limits - the limits around authentication (`registerProtection`).
 */
export function shapeOperationRoutes(app: FastifyInstance, contract: OpenApiDocument, limits: RouteLimits): void {
  app.addHook('onRoute', (route) => {
    if (route.schema?.operationId === undefined) return
    authenticateFirst(route, limits)
    requireBody(route)
  })
  addMethodNotAllowed(app, contract)
}

/**
 * For each path of the contract, answers every method it has no operation for with
 * 405, `Allow` listing those it has (RFC 9110 §15.5.6), and the `Error` body, before
 * any body is read. Every method Node's HTTP parser knows is routed (Fastify routes
 * nine by default), but CONNECT, which asks for a tunnel (400, see `app.ts`); a
 * method the parser does not know is 400 (`errors.ts`). HEAD is allowed where GET is:
 * Fastify answers it (RFC 9110 §9.3.2).
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
      // Path templates as glue turns them into Fastify's: `{id}` is `:id`.
      url: path.replace(/{(\w+)}/g, ':$1'),
      schema: { hide: true },
      onRequest: refuse,
      handler: refuse,
    })
  }
}

/**
 * glue runs security handlers as a `preHandler`, after the body is parsed and
 * validated (fastify-openapi-glue #619). Moving them to `onRequest` decides
 * authentication before the body is read: an unauthenticated request gets 401
 * whatever it carries, and no unauthenticated body is ever parsed. A failure is
 * counted against the client address first (429 past its budget, else the 401);
 * the per-token rate limit runs after a success, so it counts authenticated
 * requests only. A route without security is left as it is.
 *
 * @param route - a route of the contract; glue's security check must be an async
 *   hook (it is: it resolves, or rejects with the 401).
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
  route.onRequest = [...[route.onRequest ?? []].flat(), ...authenticate, ...(limitToken ? [limitToken] : [])]
  route.preHandler = undefined
}

/**
 * An operation with a request body needs one: Fastify lets a request without
 * `Content-Type` and without a body reach the handler (and glue does not enforce
 * `requestBody.required`); answer it 415 like any other missing media type.
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
