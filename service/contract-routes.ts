/**
 * What the service adds to the routes fastify-openapi-glue builds from openapi.yaml
 * (the contract's routes are those with an `operationId`):
 *
 * - authentication before the body is read ({@link authenticateFirst});
 * - a required request body ({@link requireBody});
 * - 405 with `Allow` for the other methods on a contract path (RFC 9110 §15.5.6).
 *
 * @module
 */
import type { FastifyInstance, HTTPMethods, onRequestAsyncHookHandler, RouteOptions } from 'fastify'
import { HttpError, UNSUPPORTED_MEDIA_TYPE } from './errors.js'

const ALL_METHODS: HTTPMethods[] = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS']

/**
 * Hooks into route registration; register glue after calling it.
 *
 * @param limitRate - the per-token rate-limit hook, run right after authentication.
 * @returns `addMethodNotAllowed()`, to call once glue has registered the contract's routes.
 */
export function shapeContractRoutes(app: FastifyInstance, limitRate: onRequestAsyncHookHandler | undefined): { addMethodNotAllowed(): void } {
  const methodsByUrl = new Map<string, HTTPMethods[]>()
  app.addHook('onRoute', (route) => {
    if (route.schema?.operationId === undefined) return
    authenticateFirst(route, limitRate)
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
 * whatever it carries, and no unauthenticated body is ever parsed. The per-token
 * rate limit runs right after, so it counts authenticated requests only. A route
 * without security (none in openapi.yaml today) is left as it is.
 */
export function authenticateFirst(route: RouteOptions, limitRate: onRequestAsyncHookHandler | undefined): void {
  if (route.preHandler === undefined) return
  route.onRequest = [...[route.onRequest ?? []].flat(), ...[route.preHandler].flat(), ...(limitRate ? [limitRate] : [])]
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
