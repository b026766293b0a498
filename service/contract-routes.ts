/**
 * What the service adds to the routes fastify-openapi-glue builds from openapi.yaml
 * (the contract's routes are those with an `operationId`):
 *
 * - authentication before the body is read, with the failed-authentication and
 *   per-token limits around it ({@link authenticateFirst});
 * - a required request body ({@link requireBody});
 * - 405 with `Allow` for the other methods on a contract path (RFC 9110 §15.5.6).
 *
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods, onRequestAsyncHookHandler, RouteOptions } from 'fastify'
import { HttpError, UNSUPPORTED_MEDIA_TYPE } from './errors.js'
import type { RouteLimits } from './protection.js'

const ALL_METHODS: HTTPMethods[] = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS']

/**
 * Hooks into route registration; register glue after calling it.
 *
 * @param limits - the limits around authentication (`registerProtection`).
 * @returns `addMethodNotAllowed()`, to call once glue has registered the contract's routes.
 */
export function shapeContractRoutes(app: FastifyInstance, limits: RouteLimits): { addMethodNotAllowed(): void } {
  const methodsByUrl = new Map<string, HTTPMethods[]>()
  app.addHook('onRoute', (route) => {
    if (route.schema?.operationId === undefined) return
    authenticateFirst(route, limits)
    requireBody(route)
    methodsByUrl.set(route.url, [...(methodsByUrl.get(route.url) ?? []), ...[route.method].flat()])
  })
  return {
    addMethodNotAllowed: () => {
      for (const [url, methods] of methodsByUrl) {
        const allow = [...methods].sort().join(', ')
        app.route({
          method: ALL_METHODS.filter((method) => !methods.includes(method)),
          url,
          schema: { hide: true },
          handler: async () => {
            throw new HttpError(405, `Method not allowed; ${url} allows ${allow}`, { allow })
          },
        })
      }
    },
  }
}

/**
 * glue runs security handlers as a `preHandler`, after the body is parsed and
 * validated (fastify-openapi-glue #619). Moving them to `onRequest` decides
 * authentication before the body is read: an unauthenticated request gets 401
 * whatever it carries, and no unauthenticated body is ever parsed. A failure is
 * counted against the client address first (429 past its budget, else the 401);
 * the per-token rate limit runs after a success, so it counts authenticated
 * requests only. A route without security (none in openapi.yaml today) is left as it is.
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
    async (request) => {
      if (request.body === undefined) throw new HttpError(415, UNSUPPORTED_MEDIA_TYPE)
    },
  ]
}
