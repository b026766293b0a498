/**
 * Builds the application from openapi.yaml (start.ts listens). The hooks a `POST /plants`
 * passes through, in order, with the default settings (test/app/request-path.test.ts
 * holds this list to `printRoutes({ includeHooks: true })`):
 *
 * | step          | hook               | does                                                         |
 * |---------------|--------------------|--------------------------------------------------------------|
 * | onRequest     | identifyRequest    | X-Request-Id; 400 without Host or with a token in the query  |
 * | onRequest     | addSecurityHeaders | security headers (protection.ts)                             |
 * | onRequest     | onRequest          | under-pressure: 503 while overloaded                         |
 * | onRequest     | authenticate       | bearerAuth before the body is read; failures counted (429)   |
 * | onRequest     | limitToken         | per-token rate limit (429)                                   |
 * | onRequest     | inviteBody         | `100 Continue` when asked (RFC 9110 §10.1.1)                 |
 * | parse         |                    | `parseJsonBody`: exact UTF-8 JSON; 415 for another media type |
 * | preValidation | refuseMissingBody  | 415 without a body                                           |
 * | validate      |                    | NewPlant, by openapi.yaml (400)                              |
 * | preHandler    | handOverExactInt64 | int64 members as exact bigints                               |
 * | handler       |                    | PlantService.createPlant → GroupCommit → PlantRepository     |
 * | onSend        | closeWhenDraining  | `Connection: close` while draining                           |
 * | onResponse    | observeRequest     | request duration metric                                      |
 *
 * Any failure on the way becomes the `Error` body in `errorHandler` (errors.ts).
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import bearerAuth from '@fastify/bearer-auth'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyHttpOptions, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions, type HookHandlerDoneFunction } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import { stringify } from 'lossless-json'
import { rememberPeer } from './client-address.js'
import type { Config } from './config.js'
import { loadContractReadings, type OpenApiDocument, operationMethods } from './contract.js'
import { shapeOperationRoutes } from './operation-routes.js'
import { CONNECT_REFUSED, clientErrorHandler, errorHandler, frameworkErrors, HttpError, notFoundHandler, requireHost } from './errors.js'
import { exactInt64, int64Format } from './exact-integers.js'
import { parseJsonBody, requireUtf8 } from './json-body.js'
import { RequestLogController } from './logging.js'
import { registerMetrics } from './metrics.js'
import { PlantService, type ServiceParts } from './plant-service.js'
import { registerProbes } from './probes.js'
import { registerProtection } from './protection.js'
import { refuseTokenInQuery, Security } from './security.js'
import { openStore } from './store/database.js'
import type { Store } from './store/store.js'
import { GroupCommit } from './store/group-commit.js'
import { migrateToLatest } from './store/migrate.js'
import { PlantRepository } from './store/plant-repository.js'

/** The part of {@link Config} the application reads; the process's part is `start.ts`'s. */
export type AppConfig = Omit<Config, 'host' | 'port' | 'logLevel' | 'shutdownGraceMs' | 'shutdownDrainDelayMs' | 'tokenGenerated'>

/** Where Swagger UI is served; the document itself is at `/docs/json` and `/docs/yaml`. */
export const DOCS_PREFIX = '/docs'

/** No coercion (openapi.yaml, "Integers"): parameters, which are text, are read by their schema instead (`exactInt64`). */
export const AJV_OPTIONS = {
  customOptions: { coerceTypes: false },
  // Runs after ajv-formats, so the exact int64 check replaces its Number.isInteger one.
  onCreate: (ajv) => ajv.addFormat('int64', int64Format),
} satisfies FastifyServerOptions['ajv']

const requestIdPattern = /^[\w\-.:]{1,128}$/

function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && requestIdPattern.test(given) ? given : randomUUID()
}

/** The operations the application serves: a contract and the service class implementing it. */
export interface Operations {
  /** The document glue builds the routes from. */
  readonly contract: OpenApiDocument
  /** The same document as served at {@link DOCS_PREFIX}; see `registerDocs`. */
  readonly documented: unknown
  readonly service: (parts: ServiceParts) => object
}

function plantStore(): Operations {
  const { document, exact } = loadContractReadings()
  return {
    contract: document,
    documented: exact,
    service: (parts) => new PlantService(parts),
  }
}

/**
 * Creates the application, ready but not listening; its steps follow a request (the table above).
 * @throws when the contract is invalid or the store cannot be opened or migrated.
 */
export async function createApp(config: AppConfig, logger: FastifyServerOptions['logger'] = false, operations: Operations = plantStore()): Promise<FastifyInstance> {
  const app = Fastify(fastifyOptions(config, logger))
  const tracing = await registerTracing(app, config)
  guardConnections(app, config)
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)
  app.addHook('onRequest', identifyRequest)
  const store = await openMigratedStore(app, config)
  registerProbes(app, store)
  const metrics = registerMetrics(app)
  const limits = await registerProtection(app, config, operationMethods(operations.contract))
  acceptJsonOnly(app)
  await app.register(bearerAuth, { keys: [...config.tokens], addHook: false, specCompliance: 'rfc6749', verifyErrorLogLevel: 'debug' })
  shapeOperationRoutes(app, operations.contract, limits)
  app.addHook('onRoute', exactInt64)
  const repository = new PlantRepository(store)
  const writer = new GroupCommit(repository, {
    maxBatch: config.groupCommitMaxBatch,
    maxInFlight: store.dialect === 'sqlite' ? 1 : config.databasePoolSize,
    onBatch: (size, seconds, failed) => {
      metrics.batchSize.observe(size)
      metrics.storeDuration.observe({ result: failed ? 'error' : 'ok' }, seconds)
    },
    tracer: tracing?.batchTracer(store.dialect),
  })
  await app.register(openapiGlue, {
    specification: operations.contract,
    serviceHandlers: operations.service({ repository, writer, metrics }),
    securityHandlers: new Security(app.verifyBearerAuth!),
  })
  await registerDocs(app, operations.documented)
  await app.ready()
  return app
}

function fastifyOptions(config: AppConfig, logger: FastifyServerOptions['logger']): FastifyHttpOptions<Server> {
  return {
    logger,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    genReqId: requestId,
    logController: new RequestLogController(),
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.connectionTimeoutMs,
    http: {
      // identifyRequest answers a missing Host with the Error body; Node's check has none.
      requireHostHeader: false,
      // Node's default (30 s) would send the 408 of HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS up to 30 s late.
      connectionsCheckingInterval: 1000,
    },
    clientErrorHandler,
    frameworkErrors,
    // Draining is answered by registerProbes with the contract's Error body.
    return503OnClosing: false,
    ajv: AJV_OPTIONS,
  }
}

async function registerTracing(app: FastifyInstance, config: AppConfig) {
  if (config.otelExporterOtlpEndpoint === undefined) return undefined
  const tracing = (await import('./tracing.js')).startTracing(config.otelExporterOtlpEndpoint)
  await tracing.register(app)
  app.addHook('onClose', () => tracing.shutdown())
  return tracing
}

function guardConnections(app: FastifyInstance, config: AppConfig): void {
  app.server.headersTimeout = config.headersTimeoutMs
  // Past this, Node closes new connections at once, before the store or the pool runs out of file descriptors.
  app.server.maxConnections = config.maxConnections
  app.server.on('connection', rememberPeer)
  // An expectation other than 100-continue is ignored, as RFC 9110 §10.1.1 allows; Node would answer 417 without a body.
  app.server.on('checkExpectation', (request, response) => app.server.emit('request', request, response))
  // 100 Continue only once authenticated (inviteBody, operation-routes.ts); Node would send it at once.
  app.server.on('checkContinue', (request, response) => app.server.emit('request', request, response))
  // CONNECT asks for a tunnel: 400, as client input never gets a 5xx; Node would close without an answer.
  app.server.on('connect', (_request, socket: Socket) => clientErrorHandler.call(app, new HttpError(400, CONNECT_REFUSED), socket))
}

/** The first hook of every request: its id on the reply, a Host (RFC 9112 §3.2), no token in the URL (RFC 6750 §2.3). */
function identifyRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  reply.header('x-request-id', request.id)
  requireHost(request)
  refuseTokenInQuery(request)
  done()
}

async function openMigratedStore(app: FastifyInstance, config: AppConfig): Promise<Store> {
  const store = openStore({
    ...config,
    onConnectionError: (err) => app.log.warn({ err }, 'store connection lost'),
    /* c8 ignore next -- a failing disk needs root: test/services/file-systems.test.ts */
    onWriteFailure: (err) => app.log.error({ err }, 'store cannot write to its disk; creates get 503 until it can'),
  })
  app.addHook('onClose', () => store.close())
  try {
    if (config.migrateOnStart) await migrateToLatest(store)
  } catch (error) {
    await app.close()
    throw error
  }
  return store
}

/** Only JSON in UTF-8, parsed exactly; any other media type or charset, or a body without one, is 415. */
function acceptJsonOnly(app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      requireUtf8(request.headers['content-type'])
      done(null, parseJsonBody(body as Buffer))
    } catch (error) {
      done(error as Error)
    }
  })
}

/** The contract, its integers digit for digit (lossless-json), and Swagger UI at {@link DOCS_PREFIX}. */
async function registerDocs(app: FastifyInstance, document: unknown): Promise<void> {
  await app.register(async (docs) => {
    docs.setReplySerializer((payload) => stringify(payload) as string)
    await docs.register(swagger, { mode: 'static', specification: { document: document as OpenApiDocument } })
    await docs.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      // No top bar: its "Explore" field loads other documents into the service's page.
      uiConfig: { layout: 'BaseLayout' },
      // Without a trailing slash swagger-ui links its assets from the root, escaping a gateway's
      // path prefix; a relative redirect (RFC 9110 §10.2.2) to `docs/` keeps them relative.
      uiHooks: {
        onRequest: async (request, reply) => {
          const [path, query] = request.url.split(/\?(.*)/s)
          if (path === DOCS_PREFIX) return reply.redirect(`${DOCS_PREFIX.slice(1)}/${query === undefined ? '' : `?${query}`}`)
        },
      },
    })
  })
}
