/**
 * Operations endpoints, outside the public contract and hidden from Swagger UI:
 * liveness, readiness and Prometheus metrics (prom-client). They reveal no plant
 * data and need no token; the gateway should route only `/plants` and `/docs` to
 * the public (README.md, "Operating it").
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import { ServiceUnavailableError } from './errors.js'
import type { Store } from './store/database.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Starts draining: readiness 503, connections closed after each response (see {@link registerOperations}). */
    startDraining(): void
  }
}

/** Paths of the operations endpoints. */
export const OPERATIONS_PATHS = { live: '/health/live', ready: '/health/ready', metrics: '/metrics' } as const

/**
 * The service's Prometheus metrics, in a registry of their own (one per app, so
 * several apps in one process do not collide).
 */
export class Metrics {
  readonly registry = new Registry()
  /** Request latency in seconds by method, route and status; its `_count` is the request count. */
  readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency in seconds, by method, route and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  })
  /** Outcomes of createPlant by kind: created, replayed, conflict. */
  readonly creates = new Counter({
    name: 'plant_store_creates_total',
    help: 'createPlant outcomes: created (stored now), replayed (idempotent replay), conflict (409)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  })
  /** Store transaction latency in seconds, by result. */
  readonly storeDuration = new Histogram({
    name: 'plant_store_store_transaction_seconds',
    help: 'Latency of one store transaction (one group-commit batch) in seconds, by result',
    labelNames: ['result'] as const,
    buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  })
  /** Plants per store transaction. */
  readonly batchSize = new Histogram({
    name: 'plant_store_group_commit_batch_size',
    help: 'Plants written per store transaction (group commit)',
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
    registers: [this.registry],
  })

  /** Also collects the standard process metrics (CPU, memory, event loop, GC) into the registry. */
  constructor() {
    collectDefaultMetrics({ register: this.registry })
  }
}

/**
 * Registers the probes and the metrics endpoint, the hook that feeds request
 * metrics, and draining.
 *
 * - `GET /health/live`: 200 while the process serves HTTP.
 * - `GET /health/ready`: 200 when the store answers and the service is not
 *   draining; else 503 with the `Error` body and `Retry-After`.
 * - `GET /metrics`: Prometheus text format.
 *
 * Draining (decorates `app.startDraining()`; also started by `close()`): readiness
 * answers 503 so the gateway stops routing here, requests are still served, and every
 * response closes its connection, so keep-alive sockets move to other replicas and
 * none busy at shutdown holds the process until its idle timeout.
 */
export function registerOperations(app: FastifyInstance, store: Store, metrics: Metrics): void {
  let draining = false
  app.decorate('startDraining', () => {
    draining = true
  })
  app.addHook('preClose', (done) => {
    draining = true
    done()
  })
  const hidden = { schema: { hide: true }, logLevel: 'warn' as const }
  // Liveness answers even under pressure: a busy process is alive (under-pressure's per-route handler).
  app.get(OPERATIONS_PATHS.live, { ...hidden, config: { pressureHandler: () => undefined } }, async () => ({ status: 'live' }))
  app.get(OPERATIONS_PATHS.ready, hidden, async () => {
    if (draining) throw new ServiceUnavailableError('The service is shutting down')
    try {
      await store.ping()
    } catch {
      throw new ServiceUnavailableError('The store is unavailable')
    }
    return { status: 'ready' }
  })
  app.get(OPERATIONS_PATHS.metrics, hidden, async (_request, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })

  app.addHook('onSend', async (_request, reply) => {
    if (draining) reply.header('connection', 'close')
  })
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched'
    metrics.requestDuration.observe({ method: request.method, route, status_code: reply.statusCode }, reply.elapsedTime / 1000)
  })
}
