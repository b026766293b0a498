/**
 * The route options of each operation, from the contract, for glue's `operationResolver`:
 * authentication before the body is read, a required body, and 405 for other methods.
 * @module
 */
import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, preValidationHookHandler, RouteOptions } from 'fastify'
import type { OpenAPIV3 } from 'openapi-types'
import type { OpenApiDocument } from '../contract.js'
import { HttpError, UNSUPPORTED_MEDIA_TYPE } from '../errors.js'
import type { RouteLimits } from '../plugins/protection.js'

/** glue's security class: one method per security scheme, each rejecting when the request fails it. */
export type SecurityHandlers = Record<string, ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined>

/** The operation object at `path` and `method` (upper or lower case) of `contract`. */
export function operationAt(contract: OpenApiDocument, path: string, method: string): OpenAPIV3.OperationObject {
  return (contract.paths[path] as Record<string, OpenAPIV3.OperationObject>)[method.toLowerCase()]!
}

/**
 * The `onRequest` hooks of an operation (OpenAPI 3.1 §4.8.10, Security Requirement Object): it
 * passes when every scheme of one requirement accepts it; an empty requirement makes it public.
 * A failure is counted against the client address (429 past its budget, else the scheme's 401);
 * the per-token limit and `100 Continue` come after a success only. Runs before the body is read.
 * @throws {Error} at start-up when the contract names a scheme `security` has no method for.
 */
export function authentication(contract: OpenApiDocument, operation: OpenAPIV3.OperationObject, security: SecurityHandlers, limits: RouteLimits): Array<onRequestHookHandler> {
  const requirements = (operation.security ?? contract.security ?? []).map((requirement) => Object.keys(requirement))
  if (requirements.length === 0 || requirements.some((schemes) => schemes.length === 0)) return [inviteBody]
  for (const scheme of requirements.flat()) if (security[scheme] === undefined) throw new Error(`No security handler for the scheme ${scheme} of ${operation.operationId}`)
  const { countFailedAuthentication, limitToken } = limits
  async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    let failure: unknown
    for (const schemes of requirements) {
      try {
        for (const scheme of schemes) await security[scheme]!(request, reply)
        return
      } catch (error) {
        failure ??= error
      }
    }
    await countFailedAuthentication?.(request)
    throw failure
  }
  return [authenticate, ...(limitToken ? [limitToken] : []), inviteBody]
}

/** Sends `100 Continue` to a client that waits for it (RFC 9110 §10.1.1). */
function inviteBody(request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
  if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue()
  done()
}

/**
 * 415 for a request without a body to an operation whose body is `required`: Fastify lets it
 * through without `Content-Type`, and glue does not enforce `requestBody.required`.
 */
export function requiredBody(operation: OpenAPIV3.OperationObject): preValidationHookHandler[] {
  if ((operation.requestBody as OpenAPIV3.RequestBodyObject | undefined)?.required !== true) return []
  return [
    function refuseMissingBody(request, _reply, done) {
      done(request.body === undefined ? new HttpError(415, UNSUPPORTED_MEDIA_TYPE) : undefined)
    },
  ]
}

/**
 * 405 with `Allow` (RFC 9110 §15.5.6) for each method a contract path has no operation
 * for, before any body is read. Every method Node's parser knows is routed but CONNECT
 * (400, plugins/http.ts); HEAD is allowed where GET is, as Fastify answers it (RFC 9110 §9.3.2).
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
    const route: RouteOptions = { method: methods.filter((method) => !operations.has(method)), url: path.replace(/{(\w+)}/g, ':$1'), schema: { hide: true }, onRequest: refuse, handler: refuse }
    app.route(route)
  }
}
