/**
 * Builds the Plant Store application from openapi.yaml; never listens (see
 * `start.ts` for the process). Tests build it too and use `inject` or `listen`.
 *
 * The path of one request:
 * `onRequest` load shedding → bearerAuth (a failure counts against the client
 * address) → per-token rate limit → parse (exact JSON) → validate NewPlant →
 * PlantService.createPlant → group commit → PlantRepository → store; any failure →
 * `errorHandler` → `Error` body.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import bearerAuth from '@fastify/bearer-auth'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import { stringify } from 'lossless-json'
import type { Config } from './config.js'
import { loadContractReadings, type OpenApiDocument } from './contract.js'
import { shapeContractRoutes } from './contract-routes.js'
import { clientErrorHandler, errorHandler, frameworkErrors, HttpError, notFoundHandler, requireHost } from './errors.js'
import { int64Format, parseJsonBody } from './json-body.js'
import { RequestLogController } from './logging.js'
import { registerMetrics } from './metrics.js'
import { readParametersBySchema } from './parameters.js'
import { PlantService } from './plant-service.js'
import { registerProbes } from './probes.js'
import { type ProtectionConfig, registerProtection } from './protection.js'
import { refuseTokenInQuery, Security } from './security.js'
import { openStore } from './store/database.js'
import type { StoreOptions } from './store/store.js'
import { GroupCommit } from './store/group-commit.js'
import { migrateToLatest } from './store/migrate.js'
import { PlantRepository } from './store/plant-repository.js'

/** The part of {@link Config} the application reads; the process's part is `start.ts`'s. */
export type AppConfig = Pick<
  Config,
  | 'tokens'
  | 'bodyLimit'
  | 'trustProxy'
  | 'keepAliveTimeoutMs'
  | 'requestTimeoutMs'
  | 'headersTimeoutMs'
  | 'connectionTimeoutMs'
  | 'maxConnections'
  | 'migrateOnStart'
  | 'groupCommitMaxBatch'
  | 'otelExporterOtlpEndpoint'
> &
  Omit<StoreOptions, 'onConnectionError' | 'onWriteFailure'> &
  ProtectionConfig

/** Where Swagger UI is served; the document itself is at `/docs/json` and `/docs/yaml`. */
export const DOCS_PREFIX = '/docs'

/**
 * How requests are validated. No coercion: a string is not an integer, null is not a
 * string (openapi.yaml, "Integers"); parameters, which are text, are read by their
 * schema instead (`readParametersBySchema`).
 */
export const AJV_OPTIONS = {
  customOptions: { coerceTypes: false },
  // Runs after ajv-formats, so the exact int64 check replaces its Number.isInteger one.
  onCreate: (ajv) => ajv.addFormat('int64', int64Format),
} satisfies FastifyServerOptions['ajv']

/** An `X-Request-Id` we accept from a client or gateway; anything else is replaced. */
const requestIdPattern = /^[\w\-.:]{1,128}$/

/** Request id: the caller's `X-Request-Id` when well-formed, else a new UUID. */
function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && requestIdPattern.test(given) ? given : randomUUID()
}

/**
 * Creates the application: a Fastify instance with the contract's routes, security,
 * validation, serialization, Swagger UI, probes, metrics, protections and the
 * migrated store. Not yet listening.
 *
 * @param config - see {@link AppConfig}; `loadConfig` gives every default.
 * @param logger - Fastify logger option (pino options, or `false`).
 * @returns the instance, ready; `close()` drains it and closes the store.
 * @throws when the contract is invalid or the store cannot be opened or migrated.
 */
export async function createApp(config: AppConfig, logger: FastifyServerOptions['logger'] = false): Promise<FastifyInstance> {
  const app = Fastify({
    logger,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    genReqId: requestId,
    logController: new RequestLogController(),
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.connectionTimeoutMs,
    http: {
      // requireHost (below) answers a missing Host with the Error body; Node's check has none.
      requireHostHeader: false,
      // How often Node looks for requests past HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS;
      // its default (30 s) would send the 408 up to 30 s late.
      connectionsCheckingInterval: 1000,
    },
    // Requests rejected before any route runs get the Error body too.
    clientErrorHandler,
    frameworkErrors,
    // Draining is answered by registerProbes with the contract's Error body.
    return503OnClosing: false,
    ajv: AJV_OPTIONS,
  })
  // Imported only when configured: without tracing no OpenTelemetry module is loaded.
  const tracing = config.otelExporterOtlpEndpoint === undefined ? undefined : (await import('./tracing.js')).startTracing(config.otelExporterOtlpEndpoint)
  if (tracing !== undefined) {
    await tracing.register(app)
    app.addHook('onClose', () => tracing.shutdown())
  }
  app.server.headersTimeout = config.headersTimeoutMs
  // Past this many open connections Node closes new ones at once, before a file
  // descriptor the store or the pool needs runs out.
  app.server.maxConnections = config.maxConnections
  // An expectation other than 100-continue is ignored, as the gateway does (RFC 9110
  // §10.1.1 allows it); Node would answer 417 without a body.
  app.server.on('checkExpectation', (request, response) => app.server.emit('request', request, response))
  // CONNECT asks for a tunnel, which the service is not (RFC 9110 §9.1: 501); Node
  // would close the connection without an answer.
  app.server.on('connect', (_request, socket: Socket) => clientErrorHandler.call(app, new HttpError(501, 'Not Implemented: CONNECT is not supported'), socket))
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)
  // Callback hooks (here and on the request path): an async one costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    requireHost(request)
    refuseTokenInQuery(request)
    done()
  })

  // Only JSON, parsed exactly; any other media type, or a body without one, is 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string))
    } catch (error) {
      done(error as Error)
    }
  })

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

  registerProbes(app, store)
  const metrics = registerMetrics(app)
  const limits = await registerProtection(app, config)
  await app.register(bearerAuth, { keys: [...config.tokens], addHook: false, specCompliance: 'rfc6749', verifyErrorLogLevel: 'debug' })

  const { document: contract, exact } = loadContractReadings()
  shapeContractRoutes(app, contract, limits)
  app.addHook('onRoute', readParametersBySchema)
  const writer = new GroupCommit(new PlantRepository(store), {
    maxBatch: config.groupCommitMaxBatch,
    maxInFlight: store.dialect === 'sqlite' ? 1 : config.databasePoolSize,
    onBatch: (size, seconds, failed) => {
      metrics.batchSize.observe(size)
      metrics.storeDuration.observe({ result: failed ? 'error' : 'ok' }, seconds)
    },
    tracer: tracing?.batchTracer(store.dialect),
  })
  await app.register(openapiGlue, {
    specification: contract,
    serviceHandlers: new PlantService(writer, (outcome) => metrics.creates.inc({ outcome })),
    securityHandlers: new Security(app.verifyBearerAuth!),
  })

  // The docs serve the contract digit for digit: its integers are bigints there, which
  // lossless-json writes as they are and JSON.stringify refuses.
  await app.register(async (docs) => {
    docs.setReplySerializer((payload) => stringify(payload) as string)
    await docs.register(swagger, { mode: 'static', specification: { document: exact as OpenApiDocument } })
    await docs.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      // No top bar: its "Explore" field loads other documents into the service's page.
      uiConfig: { layout: 'BaseLayout' },
      // Without a trailing slash @fastify/swagger-ui links its assets from the root
      // (`/docs/static/…`), escaping a gateway's path prefix; a relative redirect
      // (RFC 9110 §10.2.2) to `docs/` keeps every link relative to where it is mounted.
      uiHooks: {
        onRequest: async (request, reply) => {
          const [path, query] = request.url.split(/\?(.*)/s)
          if (path === DOCS_PREFIX) return reply.redirect(`${DOCS_PREFIX.slice(1)}/${query === undefined ? '' : `?${query}`}`)
        },
      },
    })
  })
  await app.ready()
  return app
}
