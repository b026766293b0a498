/**
 * The benchmark's design floor: what the design itself costs before any of the
 * service's own work. Fastify with fastify-openapi-glue on `openapi.yaml`, bearer
 * auth through @fastify/bearer-auth and the service's security handler, and a
 * `createPlant` that answers the Plant from the body: no store, no logger, no
 * limits, metrics or Swagger UI, Fastify's own JSON parser (ids above 2^53 lose
 * precision here; the answer does not carry them), Node's module compile cache on
 * as in `service/server.ts`. Start-up, memory and CPU per
 * request under it bound what the service can reach while glue wires the contract.
 * Never a way to run the service: it stores nothing.
 *
 * Environment (the names the service uses): `PLANT_STORE_TOKENS` (comma-separated,
 * required), `HOST` (default 127.0.0.1), `PORT` (default 0 = a free port).
 * Prints `listening <port>` on stdout once it accepts connections.
 *
 * @module
 */
import { enableCompileCache } from 'node:module'
import type { NewPlant, Plant } from '../service/contract.ts'

// As `service/server.ts` does, before the rest loads.
enableCompileCache()
const [{ default: bearerAuth }, { default: Fastify }, { default: openapiGlue }, { loadContract }, { Security }] =
  await Promise.all([
    import('@fastify/bearer-auth'),
    import('fastify'),
    import('fastify-openapi-glue'),
    import('../service/contract.ts'),
    import('../service/operations/security.ts'),
  ])

const tokens = (process.env.PLANT_STORE_TOKENS ?? '').split(',').filter((token) => token !== '')
if (tokens.length === 0) {
  process.stderr.write('design-floor: PLANT_STORE_TOKENS is required\n')
  process.exit(1)
}

const app = Fastify({ logger: false })
await app.register(bearerAuth, { keys: tokens, addHook: false, specCompliance: 'rfc6749' })
await app.register(openapiGlue, {
  specification: loadContract(),
  serviceHandlers: {
    createPlant(request: { body: NewPlant }): Promise<Plant> {
      return Promise.resolve({
        name: request.body.name,
        ...(request.body.tag === undefined ? {} : { tag: request.body.tag }),
      })
    },
  },
  securityHandlers: new Security(app.verifyBearerAuth!),
})
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' })
process.stdout.write(`listening ${new URL(address).port}\n`)
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void app.close().then(() => process.exit(0)))
