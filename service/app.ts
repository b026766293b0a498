/** The application, built from openapi.yaml; server.ts listens. @module */
import type { Server } from 'node:http'
import Fastify, { type FastifyHttpOptions, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Config } from './config.ts'
import { loadContractReadings, operationMethods } from './contract.ts'
import { errorBody, httpErrorOf } from './errors.ts'
import { RequestLogController, rememberPeer, requestId } from './logging.ts'
import operations, { type Operations } from './operations/index.ts'
import { PlantService } from './operations/plant-service.ts'
import docs from './plugins/docs.ts'
import exactJson, { ajvOptions } from './plugins/exact-json/index.ts'
import metrics from './plugins/metrics.ts'
import probes from './plugins/probes.ts'
import protection from './plugins/protection/index.ts'
import store from './plugins/store.ts'
import strictHttp, { frameworkErrors } from './plugins/strict-http/index.ts'
import tracing from './plugins/tracing.ts'

export type { Operations } from './operations/index.ts'
export { DOCS_PREFIX } from './plugins/docs.ts'

/** The part of {@link Config} the application reads; the rest is server.ts's. */
export type AppConfig = Omit<
  Config,
  'host' | 'port' | 'logLevel' | 'shutdownGraceMs' | 'shutdownDrainDelayMs' | 'tokenGenerated'
>

/** exact-json's: no coercion (it reads integer parameters) and the exact int64 format (openapi.yaml, "Integers"). */
export const AJV_OPTIONS = ajvOptions satisfies FastifyServerOptions['ajv']

function plantStore(): Operations {
  const readings = loadContractReadings()
  return { contract: readings.document, documented: readings, service: (parts) => new PlantService(parts) }
}

/** Ready, not listening. @throws when the contract is invalid or the store cannot be opened or migrated. */
export async function createApp(
  config: AppConfig,
  logger: FastifyServerOptions['logger'] = false,
  ops: Operations = plantStore(),
): Promise<FastifyInstance> {
  const app = Fastify(fastifyOptions(config, logger))
  app.server.on('connection', rememberPeer)
  if (config.otelExporterOtlpEndpoint !== undefined)
    await app.register(tracing, { endpoint: config.otelExporterOtlpEndpoint })
  await app.register(strictHttp, {
    errorBody,
    mapError: httpErrorOf,
    maxConnections: config.maxConnections,
  })
  await app.register(exactJson, { onlyJson: true })
  await app.register(metrics)
  await app.register(store, config)
  await app.register(probes)
  await app.register(protection, { ...config, operationMethods: operationMethods(ops.contract) })
  // Outside production a reply outside its schema fails loudly (500); loaded only then.
  if (config.nodeEnv !== 'production') {
    const [{ default: responseValidation }, { default: formats }] = await Promise.all([
      import('@fastify/response-validation'),
      import('ajv-formats'),
    ])
    await app.register(responseValidation, { ajv: { plugins: [formats.default, AJV_OPTIONS.onCreate] } })
  }
  await app.register(operations, { config, operations: ops })
  await app.register(docs, ops.documented)
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
      // strict-http answers a missing Host with the Error body; Node's check has none.
      requireHostHeader: false,
      // A request without a body is born ended: Node aborts the thousands a flood leaves unanswered for less.
      optimizeEmptyRequests: true,
      headersTimeout: config.headersTimeoutMs,
      // Node's default (30 s) would send the timeouts' 408 up to 30 s late.
      connectionsCheckingInterval: 1000,
    },
    frameworkErrors,
    // The probes plugin answers draining with the Error body.
    return503OnClosing: false,
    ajv: AJV_OPTIONS,
  }
}
