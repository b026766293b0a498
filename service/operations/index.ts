/** The operations of openapi.yaml: glue routes them to the service class, guarded by the security class. @module */
import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import openapiGlue, { type SecurityError } from 'fastify-openapi-glue'
import type { AppConfig } from '../app.ts'
import type { Contract, OpenApiDocument } from '../contract.ts'
import { HttpError, UNSUPPORTED_MEDIA_TYPE } from '../errors.ts'
import type { ServiceParts } from './plant-service.ts'
import { Security } from './security.ts'

/** A contract and the service class implementing it. */
export interface Operations {
  readonly contract: OpenApiDocument
  /** The same document as served at `/docs`. */
  readonly documented: Pick<Contract, 'exact' | 'text'>
  readonly service: (parts: ServiceParts) => object
}

async function operations(
  app: FastifyInstance,
  { config, operations }: { config: Pick<AppConfig, 'tokens'>; operations: Operations },
): Promise<void> {
  const { contract } = operations
  await app.register(bearerAuth, {
    keys: [...config.tokens],
    addHook: false,
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'debug',
  })
  const verify = app.verifyBearerAuth
  /* c8 ignore next -- registering @fastify/bearer-auth decorates it; its types call it optional */
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not decorate verifyBearerAuth')
  const security = new Security(verify, app.limits)
  // glue only warns of a scheme without a method, then refuses every request of its operations.
  for (const scheme of Object.keys({ ...contract.components?.securitySchemes }))
    if (typeof Reflect.get(security, scheme) !== 'function')
      throw new Error(`No security handler for the scheme ${scheme}`)
  await app.register(async (routes) => {
    const sets = operationSets(contract)
    routes.addHook('onRoute', (route) => authenticateBeforeBody(route, sets))
    await routes.register(openapiGlue, {
      specification: contract,
      serviceHandlers: operations.service({ ...app.plants, metrics: app.metrics }),
      securityHandlers: security,
    })
  })
}

export default fp(operations, { name: 'operations', dependencies: ['strict-http', 'store', 'metrics', 'protection'] })

/**
 * glue runs the security class (the AND/OR of an operation's requirements) as a `preHandler`: after the body is
 * read, parsed and validated. Here it runs on request instead, so an unauthenticated client gets 401 before any
 * body is read (not 400 for a bad one), and `100 Continue` (RFC 9110 §10.1.1) only once authenticated. A required
 * body without Content-Type is 415 there too: Fastify would pass `undefined` to validation (400).
 */
export function authenticateBeforeBody(route: RouteOptions, { guarded, bodyRequired }: OperationSets): void {
  const operationId = route.schema?.operationId
  // glue's is first: it is in the options glue routes with, and onRoute hooks append theirs.
  const preHandlers = [route.preHandler].flat().filter((hook) => hook !== undefined)
  const security = guarded.has(operationId) ? preHandlers.shift() : undefined
  route.preHandler = preHandlers
  const needsBody = bodyRequired.has(operationId)
  route.onRequest = [route.onRequest, authenticate].flat().filter((hook) => hook !== undefined)
  async function authenticate(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      await security?.call(this, request, reply, () => {})
    } catch (error) {
      // glue's SecurityError holds each scheme's failure; the first carries its challenge (RFC 6750 §3).
      throw (error as SecurityError).errors[0]
    }
    if (needsBody && request.headers['content-type'] === undefined) throw new HttpError(415, UNSUPPORTED_MEDIA_TYPE)
    // The one place 100 Continue is sent: a client is invited to send its body once its request is accepted.
    if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue()
  }
}

/** operationIds of a contract. */
export interface OperationSets {
  /** Those glue guards: with a security requirement, the operation's or else the document's. */
  readonly guarded: ReadonlySet<unknown>
  /** Those whose `requestBody` is `required`. */
  readonly bodyRequired: ReadonlySet<unknown>
}

/** glue hands an onRoute hook the operationId, not the operation: what {@link authenticateBeforeBody} reads of it. */
export function operationSets(contract: OpenApiDocument): OperationSets {
  const operations = Object.values(contract.paths)
    .flatMap((item = {}) => Object.values(item))
    .filter((operation) => typeof operation === 'object' && 'responses' in operation)
  const ids = (test: (operation: (typeof operations)[number]) => boolean) =>
    new Set(operations.filter(test).map((operation) => operation.operationId))
  return {
    guarded: ids((operation) => (operation.security ?? contract.security ?? []).length > 0),
    bodyRequired: ids(
      ({ requestBody }) => requestBody !== undefined && 'required' in requestBody && requestBody.required === true,
    ),
  }
}
