/** Health probes and draining, outside the contract (docs/operations.md, "Probes and metrics"). @module */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ServiceUnavailableError } from '../errors.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Readiness turns 503 and every answer closes its connection (strict-http); `close()` does the same. */
    startDraining(): void
  }
}

/** Draining still serves, but closes each connection so clients move to other replicas. */
async function probes(app: FastifyInstance): Promise<void> {
  let draining = false
  app.decorate('startDraining', () => {
    draining = true
    app.closeConnections()
  })
  app.addHook('preClose', (done) => {
    draining = true
    done()
  })
  const hidden = { schema: { hide: true }, logLevel: 'warn' as const }
  // A busy process is alive.
  app.get('/health/live', { ...hidden, config: { pressureHandler: () => undefined } }, async () => ({ status: 'live' }))
  app.get('/health/ready', hidden, async () => {
    if (draining) throw new ServiceUnavailableError('The service is shutting down')
    try {
      await app.store.ping()
    } catch {
      throw new ServiceUnavailableError('The store is unavailable')
    }
    return { status: 'ready' }
  })
}

export default fp(probes, { name: 'probes', dependencies: ['strict-http', 'store'] })
