/**
 * OpenTelemetry tracing, imported by app.ts only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set,
 * so without it a request pays nothing. Its spans: docs/operations.md, "Tracing".
 * @module
 */
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { type Context, context, propagation, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { BatchTracer } from './store/group-commit.js'
import type { Store } from './store/store.js'

export interface Tracing {
  /** Registers @fastify/otel and the trace id in log lines; call it before any hook or route is added. */
  register(app: FastifyInstance): Promise<void>
  batchTracer(dialect: Store['dialect']): BatchTracer
  /** Exports what is still buffered, then stops. */
  shutdown(): Promise<void>
}

/** Routes that are not traced: probes and metrics, polled every few seconds by machines. */
const UNTRACED = /^\/(health\/|metrics(\?|$))/

/** `db.system.name` of each dialect (semantic conventions). */
const DB_SYSTEM = { sqlite: 'sqlite', postgres: 'postgresql' } as const

/** Once per process: tracing needs a context manager and the W3C propagator, both global in the API. */
let globalsSet = false

/**
 * Starts tracing for one application, with a tracer provider of its own (an app built twice
 * in one process exports twice, not into the other's); spans go to `<endpoint>/v1/traces`.
 */
export function startTracing(endpoint: string): Tracing {
  if (!globalsSet) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    propagation.setGlobalPropagator(new W3CTraceContextPropagator())
    globalsSet = true
  }
  const provider = new NodeTracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
    resource: resourceFromAttributes({ 'service.name': 'plant-store' }).merge(detectResources({ detectors: [envDetector] })),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: new URL('v1/traces', endpoint.replace(/\/?$/, '/')).href }))],
  })
  const instrumentation = new FastifyOtelInstrumentation({
    // One span per request and one for the handler: a span per hook would cost more than it tells.
    instrumentHooks: false,
    ignorePaths: ({ url }) => UNTRACED.test(url),
    // The handler's span is named by its operationId; glue's bound method would name it "bound createPlant".
    lifecycleHook: (span, { request }) => {
      const operationId = request.routeOptions.schema?.operationId
      if (operationId !== undefined) span.updateName(operationId)
    },
  })
  instrumentation.setTracerProvider(provider)

  const register = async (app: FastifyInstance) => {
    await app.register(instrumentation.plugin())
    // Runs right after @fastify/otel's own onRequest hook, which starts the request's span.
    app.addHook('onRequest', (request, _reply, done) => {
      const { span } = request.opentelemetry()
      if (span !== null) {
        // The HTTP semantic conventions' span name: method and route.
        span.updateName(request.routeOptions.url === undefined ? request.method : `${request.method} ${request.routeOptions.url}`)
        // The request's own logger, not a second child logger; Fastify's stand-in (no logger) has no bindings.
        const log = request.log as Partial<Pick<Logger, 'setBindings'>>
        const { traceId, spanId } = span.spanContext()
        log.setBindings?.({ traceId, spanId })
      }
      done()
    })
  }
  return {
    register,
    batchTracer: (dialect) => batchTracer(provider.getTracer('plant-store'), dialect),
    shutdown: () => provider.shutdown(),
  }
}

/** Transaction spans, each a child of the handler that started its batch, linking the others ("one operation, many causes"). */
function batchTracer(tracer: Tracer, dialect: Store['dialect']): BatchTracer {
  return {
    capture: () => context.active(),
    run: (contexts, write) => {
      const [first, ...others] = contexts as Context[]
      const links = others.map((other) => trace.getSpanContext(other)).filter((link) => link !== undefined).map((link) => ({ context: link }))
      const attributes = { 'db.system.name': DB_SYSTEM[dialect], 'db.operation.batch.size': contexts.length }
      return tracer.startActiveSpan('store transaction', { kind: SpanKind.CLIENT, attributes, links }, first!, async (span) => {
        try {
          const result = await write()
          span.end()
          return result
        } catch (error) {
          span.recordException(error as Error)
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message })
          span.end()
          throw error
        }
      })
    },
  }
}
