/**
 * The benchmark's design floor: Fastify and fastify-openapi-glue on `openapi.yaml`, @fastify/bearer-auth as glue's
 * security handler, and a `createPlant` that answers the Plant from the body; nothing of the service's own (no
 * store, logger, limits, metrics, exact integers). What the design costs before the service's work.
 * Environment: `PLANT_STORE_TOKENS` (required), `HOST`, `PORT`.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { enableCompileCache } from 'node:module'
import type { FastifyReply, FastifyRequest } from 'fastify'

enableCompileCache() // as the service does, before the rest loads
const [{ default: bearerAuth }, { default: Fastify }, { default: openapiGlue }, { parse }] = await Promise.all([
  import('@fastify/bearer-auth'),
  import('fastify'),
  import('fastify-openapi-glue'),
  import('yaml'),
])

const app = Fastify()
const keys = (process.env.PLANT_STORE_TOKENS ?? '').split(',').filter(Boolean)
await app.register(bearerAuth, { keys, addHook: false })
await app.register(openapiGlue, {
  specification: parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as object,
  serviceHandlers: {
    createPlant: async ({ body }: { body: { name: string; tag?: string } }) => ({ name: body.name, tag: body.tag }),
  },
  securityHandlers: {
    bearerAuth: (request: FastifyRequest, reply: FastifyReply) =>
      new Promise<void>((resolve, reject) =>
        app.verifyBearerAuth!(request, reply, (error) => (error ? reject(error) : resolve())),
      ),
  },
})
await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' })
process.once('SIGTERM', () => void app.close())
