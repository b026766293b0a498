/** Prometheus metrics at `GET /metrics`, outside the contract (docs/operations.md, "Probes and metrics"). @module */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'

declare module 'fastify' {
  interface FastifyInstance {
    readonly metrics: Metrics
  }
}

/** A registry per app, so apps in one process do not collide. */
export class Metrics {
  readonly registry = new Registry()
  readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency in seconds, by method, route and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  })
  readonly creates = new Counter({
    name: 'plant_store_creates_total',
    help: 'createPlant outcomes: created (stored now), replayed (idempotent replay), conflict (409)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  })
  readonly storeDuration = new Histogram({
    name: 'plant_store_store_transaction_seconds',
    help: 'Latency of one store transaction (one group-commit batch) in seconds, by result',
    labelNames: ['result'] as const,
    buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  })
  readonly batchSize = new Histogram({
    name: 'plant_store_group_commit_batch_size',
    help: 'Plants written per store transaction (group commit)',
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
    registers: [this.registry],
  })

  constructor() {
    collectDefaultMetrics({ register: this.registry })
  }

  /** The group commit's `onBatch`: one store transaction of `size` plants, `seconds` long. */
  readonly observeBatch = (size: number, seconds: number, failed: boolean): void => {
    this.batchSize.observe(size)
    this.storeDuration.observe({ result: failed ? 'error' : 'ok' }, seconds)
  }
}

async function metrics(app: FastifyInstance): Promise<void> {
  const metrics = new Metrics()
  app.decorate('metrics', metrics)
  // Exempt from load shedding, as liveness is: an overloaded replica is what a scrape should see.
  const config = { pressureHandler: () => undefined }
  app.get('/metrics', { schema: { hide: true }, logLevel: 'warn', config }, async (_request, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
  app.addHook('onResponse', function observeRequest(request, reply, done) {
    const route = request.routeOptions.url ?? 'unmatched'
    metrics.requestDuration.observe(
      { method: request.method, route, status_code: reply.statusCode },
      reply.elapsedTime / 1000,
    )
    done()
  })
}

export default fp(metrics, { name: 'metrics' })
