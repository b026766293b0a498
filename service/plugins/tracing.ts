/** OpenTelemetry tracing, loading ../tracing.ts only when registered; register it first. @module */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Tracing } from '../tracing.ts'

declare module 'fastify' {
  interface FastifyInstance {
    readonly tracing: Tracing
  }
}

async function tracing(app: FastifyInstance, { endpoint }: { endpoint: string }): Promise<void> {
  const tracing = (await import('../tracing.ts')).startTracing(endpoint)
  await tracing.register(app)
  app.addHook('onClose', () => tracing.shutdown())
  app.decorate('tracing', tracing)
}

export default fp(tracing, { name: 'tracing' })
