/**
 * OpenTelemetry tracing, imported only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (docs/operations.md, "Tracing").
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
import { asError } from './errors.ts'
import { redactQuery } from './logging.ts'
import type { BatchTracer } from './store/plant-repository.ts'
import type { Store } from './store/store.ts'

/** OpenTelemetry for one app: spans of requests and of the store's batches. */
export interface Tracing {
  /** Call before any hook or route is added. */
  register(app: FastifyInstance): Promise<void>
  batchTracer(dialect: Store['dialect']): BatchTracer
  shutdown(): Promise<void>
}

/** Probes and metrics: polled by machines, not worth a trace. */
const UNTRACED = /^\/(health\/|metrics(\?|$))/

const DB_SYSTEM = { sqlite: 'sqlite', postgres: 'postgresql' } as const

/** The context manager and propagator are process-wide in the API: set once. */
let globalsSet = false

/** A tracer provider per app, so two apps in one process share no exporter; spans go to `<endpoint>/v1/traces`. */
export function startTracing(endpoint: string): Tracing {
  if (!globalsSet) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    propagation.setGlobalPropagator(new W3CTraceContextPropagator())
    globalsSet = true
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'plant-store' }).merge(
      detectResources({ detectors: [envDetector] }),
    ),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: new URL('v1/traces', endpoint.replace(/\/?$/, '/')).href })),
    ],
  })
  const instrumentation = new FastifyOtelInstrumentation({
    // A span per hook would cost more than it tells.
    instrumentHooks: false,
    ignorePaths: ({ url }) => UNTRACED.test(url),
    // @fastify/otel sets `url.path` to the whole target: the path alone, the query's values redacted.
    requestHook: (span, { url }) => {
      const query = url.indexOf('?')
      if (query === -1) return
      span.setAttributes({ 'url.path': url.slice(0, query), 'url.query': redactQuery(url.slice(query + 1)) })
    },
    // Else glue's bound method names it "bound createPlant".
    lifecycleHook: (span, { request }) => {
      const operationId = request.routeOptions.schema?.operationId
      if (operationId !== undefined) span.updateName(operationId)
    },
  })
  instrumentation.setTracerProvider(provider)

  const register = async (app: FastifyInstance) => {
    await app.register(instrumentation.plugin())
    app.addHook('onRequest', (request, _reply, done) => {
      const { span } = request.opentelemetry()
      if (span !== null) {
        span.updateName(
          request.routeOptions.url === undefined ? request.method : `${request.method} ${request.routeOptions.url}`,
        )
        const { traceId, spanId } = span.spanContext()
        if (hasBindings(request.log)) request.log.setBindings({ traceId, spanId })
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

/** Fastify's stand-in logger (no logger configured) has no `setBindings`; pino's has. */
function hasBindings(log: object): log is Pick<Logger, 'setBindings'> {
  return 'setBindings' in log
}

/** What {@link batchTracer}'s `capture` returned; the group commit holds it as `unknown`. */
function isContext(captured: unknown): captured is Context {
  return typeof captured === 'object' && captured !== null && 'getValue' in captured
}

/** A transaction span is a child of the handler that started its batch, linking the others. */
function batchTracer(tracer: Tracer, dialect: Store['dialect']): BatchTracer {
  return {
    capture: () => context.active(),
    run: async (captured, write) => {
      const [parent, ...others] = captured.filter(isContext)
      const links = others
        .map((other) => trace.getSpanContext(other))
        .filter((link) => link !== undefined)
        .map((link) => ({ context: link }))
      const attributes = { 'db.system.name': DB_SYSTEM[dialect], 'db.operation.batch.size': captured.length }
      const span = tracer.startSpan('store transaction', { kind: SpanKind.CLIENT, attributes, links }, parent)
      try {
        const result = await context.with(trace.setSpan(context.active(), span), write)
        span.end()
        return result
      } catch (error) {
        const failure = asError(error)
        span.recordException(failure)
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message })
        span.end()
        throw error
      }
    },
  }
}
