/**
 * Builds the Plant Store application from openapi.yaml; never listens (see
 * `server.ts` for the process). Tests build it too and use `inject` or `listen`.
 *
 * The path of one request (STYLE.md):
 * `onRequest` bearerAuth → parse (exact JSON) → validate NewPlant → PlantService.createPlant
 * → PlantRepository → store; any failure → `errorHandler` → `Error` body.
 *
 * @module
 */
import bearerAuth from '@fastify/bearer-auth'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyInstance, type FastifyServerOptions, type HTTPMethods, type RouteOptions } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import type { Config } from './config.js'
import { loadContract } from './contract.js'
import { HttpError, UNSUPPORTED_MEDIA_TYPE, errorHandler, notFoundHandler } from './errors.js'
import { int64Format, parseJsonBody } from './json-body.js'
import { PlantService } from './plant-service.js'
import { Security } from './security.js'
import { openStore } from './store/database.js'
import { migrateToLatest } from './store/migrate.js'
import { GroupCommit } from './store/group-commit.js'
import { PlantRepository } from './store/plant-repository.js'

/** The part of {@link Config} the application needs; store settings beyond `dataDir` are optional. */
export type AppConfig = Pick<Config, 'tokens' | 'bodyLimit' | 'dataDir'> &
  Partial<Pick<Config, 'databaseUrl' | 'poolSize' | 'statementTimeoutMs' | 'connectTimeoutMs' | 'migrateOnStart' | 'groupCommitMaxBatch'>>

/** Where Swagger UI is served; the document itself is at `/docs/json` and `/docs/yaml`. */
export const DOCS_PREFIX = '/docs'

const ALL_METHODS: HTTPMethods[] = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS']

/**
 * Creates the application: a Fastify instance with the contract's routes, security,
 * validation, serialization, Swagger UI and the migrated store. Not yet listening.
 *
 * @param config - tokens, body limit (bytes), and the store: data directory, or PostgreSQL URL and pool settings.
 * @param logger - Fastify logger option (pino options, or `false`).
 * @returns the instance, ready; `close()` closes the store.
 * @throws when the contract is invalid or the store cannot be opened or migrated.
 */
export async function createApp(config: AppConfig, logger: FastifyServerOptions['logger'] = false): Promise<FastifyInstance> {
  const app = Fastify({
    logger,
    bodyLimit: config.bodyLimit,
    ajv: {
      // No coercion: a string is not an integer, null is not a string (issue: strict validation).
      customOptions: { coerceTypes: false },
      // Runs after ajv-formats, so the exact int64 check replaces its Number.isInteger one.
      onCreate: (ajv) => ajv.addFormat('int64', int64Format),
    },
  })
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)

  // Only JSON, parsed exactly; any other media type, or a body without one, is 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string))
    } catch (error) {
      done(error as Error)
    }
  })

  const store = openStore({ ...config, onIdleError: (err) => app.log.warn({ err }, 'store connection lost while idle') })
  app.addHook('onClose', () => store.close())
  if (config.migrateOnStart ?? true) await migrateToLatest(store.db)

  await app.register(bearerAuth, { keys: [...config.tokens], addHook: false, specCompliance: 'rfc6749', verifyErrorLogLevel: 'debug' })

  const routesByUrl = new Map<string, HTTPMethods[]>()
  app.addHook('onRoute', (route) => {
    if (route.schema?.operationId === undefined) return
    authenticateFirst(route)
    requireBody(route)
    routesByUrl.set(route.url, [...(routesByUrl.get(route.url) ?? []), ...[route.method].flat()])
  })

  const contract = loadContract()
  await app.register(openapiGlue, {
    specification: structuredClone(contract),
    serviceHandlers: new PlantService(
      new GroupCommit(new PlantRepository(store), {
        maxBatch: config.groupCommitMaxBatch ?? 100,
        maxInFlight: store.dialect === 'sqlite' ? 1 : (config.poolSize ?? 10),
      }),
    ),
    securityHandlers: new Security(app.verifyBearerAuth!),
  })
  for (const [url, methods] of routesByUrl) {
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

  await app.register(swagger, { mode: 'static', specification: { document: contract as never } })
  await app.register(swaggerUi, { routePrefix: DOCS_PREFIX })
  await app.ready()
  return app
}

/**
 * glue runs security handlers as a `preHandler`, after the body is parsed and
 * validated (fastify-openapi-glue #619). Moving them to `onRequest` decides
 * authentication before the body is read: an unauthenticated request gets 401
 * whatever it carries, and no unauthenticated body is ever parsed.
 */
function authenticateFirst(route: RouteOptions): void {
  if (route.preHandler === undefined) return
  route.onRequest = [...[route.onRequest ?? []].flat(), ...[route.preHandler].flat()]
  route.preHandler = undefined
}

/**
 * An operation with a request body needs one: Fastify lets a request without
 * `Content-Type` and without a body reach the handler (and glue does not enforce
 * `requestBody.required`); answer it 415 like any other missing media type.
 */
function requireBody(route: RouteOptions): void {
  const schema = route.schema as { body?: unknown }
  if (schema.body === undefined) return
  route.preValidation = [
    ...[route.preValidation ?? []].flat(),
    async (request) => {
      if (request.body === undefined) throw new HttpError(415, UNSUPPORTED_MEDIA_TYPE)
    },
  ]
}
