/** Each operation's route options from the contract, for glue's `operationResolver`. @module */
import { METHODS } from 'node:http'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  preValidationHookHandler,
  RouteOptions,
} from 'fastify'
import type { OpenAPIV3 } from 'openapi-types'
import type { OpenApiDocument } from '../contract.ts'
import { HttpError, UNSUPPORTED_MEDIA_TYPE } from '../errors.ts'
import type { RouteLimits } from '../plugins/protection.ts'

/** glue's security class: one method per security scheme, rejecting a request that fails it. */
export type SecurityHandlers = Record<
  string,
  ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined
>

/** The Operation Object of `method` (any case) at `path`, as glue names it. */
export function operationAt(contract: OpenApiDocument, path: string, method: string): OpenAPIV3.OperationObject {
  return (contract.paths[path] as Record<string, OpenAPIV3.OperationObject>)[method.toLowerCase()]!
}

/** Authentication hooks, before the body is read (OpenAPI 3.1 §4.8.10). @throws {Error} for a scheme `security` has no method for. */
export function authentication(
  contract: OpenApiDocument,
  operation: OpenAPIV3.OperationObject,
  security: SecurityHandlers,
  limits: RouteLimits,
): Array<onRequestHookHandler> {
  const requirements = (operation.security ?? contract.security ?? []).map((requirement) => Object.keys(requirement))
  if (requirements.length === 0 || requirements.some((schemes) => schemes.length === 0)) return [inviteBody]
  for (const scheme of requirements.flat())
    if (security[scheme] === undefined)
      throw new Error(`No security handler for the scheme ${scheme} of ${operation.operationId}`)
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

/** RFC 9110 §10.1.1. */
function inviteBody(request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
  if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue()
  done()
}

/** 415 for a missing `required` body: neither Fastify nor glue refuses it. */
export function requiredBody(operation: OpenAPIV3.OperationObject): preValidationHookHandler[] {
  if ((operation.requestBody as OpenAPIV3.RequestBodyObject | undefined)?.required !== true) return []
  return [
    function refuseMissingBody(request, _reply, done) {
      done(request.body === undefined ? new HttpError(415, UNSUPPORTED_MEDIA_TYPE) : undefined)
    },
  ]
}

/** 405 with `Allow` (RFC 9110 §15.5.6) before any body is read; HEAD where GET is (RFC 9110 §9.3.2), CONNECT left to plugins/http.ts. */
export function addMethodNotAllowed(app: FastifyInstance, contract: OpenApiDocument): void {
  for (const method of METHODS)
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
  const methods = app.supportedMethods
  for (const [path, item = {}] of Object.entries(contract.paths)) {
    const operations = new Set(
      methods.filter(
        (method) =>
          (item as Record<string, { operationId?: string } | undefined>)[method.toLowerCase()]?.operationId !==
          undefined,
      ),
    )
    if (operations.has('GET')) operations.add('HEAD')
    const allow = [...operations].sort().join(', ')
    const refuse = async (): Promise<never> => {
      throw new HttpError(405, `Method not allowed; ${path} allows ${allow}`, { allow })
    }
    const route: RouteOptions = {
      method: methods.filter((method) => !operations.has(method)),
      url: path.replace(/{(\w+)}/g, ':$1'),
      schema: { hide: true },
      onRequest: refuse,
      handler: refuse,
    }
    app.route(route)
  }
}
