/**
 * Health probes and draining, outside the contract and hidden from Swagger UI. They
 * reveal no plant data and need no token; keep them off the public routes
 * (docs/operations.md, "Probes and metrics").
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { ServiceUnavailableError } from './errors.js'
import type { Store } from './store/store.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Starts draining: readiness 503, connections closed after each response (see {@link registerProbes}). */
    startDraining(): void
  }
}

/**
 * Registers the probes and draining.
 *
 * - `GET /health/live`: 200 while the process serves HTTP, even under load shedding.
 * - `GET /health/ready`: 200 when the store answers and the service is not
 *   draining; else 503 with the `Error` body and `Retry-After`.
 *
 * Draining (`app.startDraining()`, and `close()`): readiness answers 503 so the
 * gateway stops routing here, requests are still served, and every response closes
 * its connection, so keep-alive sockets move to other replicas and none busy at
 * shutdown holds the process until its idle timeout.
 */
export function registerProbes(app: FastifyInstance, store: Store): void {
  let draining = false
  app.decorate('startDraining', () => {
    draining = true
  })
  app.addHook('preClose', (done) => {
    draining = true
    done()
  })
  const hidden = { schema: { hide: true }, logLevel: 'warn' as const }
  // under-pressure's per-route handler: a busy process is alive.
  app.get('/health/live', { ...hidden, config: { pressureHandler: () => undefined } }, async () => ({ status: 'live' }))
  app.get('/health/ready', hidden, async () => {
    if (draining) throw new ServiceUnavailableError('The service is shutting down')
    try {
      await store.ping()
    } catch {
      throw new ServiceUnavailableError('The store is unavailable')
    }
    return { status: 'ready' }
  })
  app.addHook('onSend', function closeWhenDraining(_request, reply, payload, done) {
    if (draining) reply.header('connection', 'close')
    done(null, payload)
  })
}
