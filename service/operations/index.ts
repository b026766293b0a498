/** The operations of openapi.yaml, routed by fastify-openapi-glue (the layout of glue's generated projects). @module */
import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import openapiGlue from 'fastify-openapi-glue'
import type { AppConfig } from '../app.ts'
import type { OpenApiDocument } from '../contract.ts'
import { exactInt64 } from '../exact-integers.ts'
import type { ServiceParts } from './plant-service.ts'
import { addMethodNotAllowed, authentication, operationAt, requiredBody, type SecurityHandlers } from './routes.ts'
import { Security } from './security.ts'

/** A contract and the service class implementing it. */
export interface Operations {
  readonly contract: OpenApiDocument
  /** The same document as served at `/docs`. */
  readonly documented: unknown
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
  const security = new Security(app.verifyBearerAuth!) as unknown as SecurityHandlers
  const service = operations.service({ ...app.plants, metrics: app.metrics }) as Record<
    string,
    ((...args: never[]) => unknown) | undefined
  >
  addMethodNotAllowed(app, contract)
  await app.register(async (routes) => {
    // The resolver cannot see the dereferenced schemas; onRoute can.
    routes.addHook('onRoute', exactInt64)
    await routes.register(openapiGlue, {
      specification: contract,
      operationResolver: (operationId: string, method: string, path: string) => {
        const operation = operationAt(contract, path, method)
        return {
          handler: service[operationId]?.bind(service),
          onRequest: authentication(contract, operation, security, app.limits),
          preValidation: requiredBody(operation),
        } as Partial<RouteOptions> as RouteOptions
      },
    })
  })
}

export default fp(operations, { name: 'operations', dependencies: ['http', 'store', 'metrics', 'protection'] })
