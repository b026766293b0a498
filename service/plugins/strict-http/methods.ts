/** 404 (no such path) told from 405 with `Allow` (a known path, another method), from the routes registered. @module */
import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import FindMyWay from 'find-my-way'

/** An error carrying its status and headers, as the error mapping reads it. */
export function httpError(statusCode: number, message: string, headers: Record<string, string> = {}): Error {
  return Object.assign(new Error(message), { statusCode, headers })
}

type Method = Parameters<FindMyWay.Instance<FindMyWay.HTTPVersion.V1>['find']>[0]

const NODE_METHODS = new Set<string>(METHODS)
/** The methods Node's parser reads, the only ones a request can have. */
const isMethod = (method: string): method is Method => NODE_METHODS.has(method)

/**
 * Watches every route registered after it (`onRoute`), in a router of its own with the app's router options.
 * @returns the error for a request no route matched: 405 with `Allow` (RFC 9110 §15.5.6, HEAD where GET is,
 *   §9.3.2) when another method has a route at its path, else 404.
 */
export function observeRoutes(app: FastifyInstance): (request: FastifyRequest) => Error {
  const config = { ...app.initialConfig, ...app.initialConfig.routerOptions }
  const router = FindMyWay({
    caseSensitive: config.caseSensitive,
    ignoreTrailingSlash: config.ignoreTrailingSlash,
    ignoreDuplicateSlashes: config.ignoreDuplicateSlashes,
    maxParamLength: config.maxParamLength,
  })
  const methods = new Set<Method>()
  app.addHook('onRoute', ({ method, url }) => {
    for (const one of [method].flat().filter(isMethod)) {
      methods.add(one)
      if (!router.hasRoute(one, url)) router.on(one, url, () => {}, url)
    }
  })
  return (request) => {
    const allowed = new Map<string, string>()
    for (const method of methods) {
      const found = router.find(method, request.url)
      if (found !== null) allowed.set(method, `${found.store}`)
    }
    const get = allowed.get('GET')
    if (get !== undefined) allowed.set('HEAD', get)
    const [path = ''] = request.url.split('?')
    if (allowed.size === 0 || allowed.has(request.method))
      return httpError(404, `Route ${request.method} ${path} not found`)
    const allow = [...allowed.keys()].sort().join(', ')
    // The route's path as OpenAPI and RFC 6570 write it: `{id}`, not `:id`.
    const [route = path] = allowed.values()
    const template = route.replace(/:(\w+)/g, '{$1}')
    return httpError(405, `Method not allowed; ${template} allows ${allow}`, { allow })
  }
}
