/**
 * The contract and Swagger UI at `/docs`: the document as `/docs/json` and `/docs/yaml`,
 * its integers digit for digit (lossless-json).
 * @module
 */
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'lossless-json'
import type { OpenApiDocument } from '../contract.js'

/** Where Swagger UI is served. */
export const DOCS_PREFIX = '/docs'

async function docs(app: FastifyInstance, { document }: { document: unknown }): Promise<void> {
  await app.register(async (docs) => {
    docs.setReplySerializer((payload) => stringify(payload) as string)
    await docs.register(swagger, { mode: 'static', specification: { document: document as OpenApiDocument } })
    await docs.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      // No top bar: its "Explore" field loads other documents into the service's page.
      uiConfig: { layout: 'BaseLayout' },
      // Without a trailing slash swagger-ui links its assets from the root, escaping a gateway's
      // path prefix; a relative redirect (RFC 9110 §10.2.2) to `docs/` keeps them relative.
      uiHooks: {
        onRequest: async (request, reply) => {
          const [path, query] = request.url.split(/\?(.*)/s)
          if (path === DOCS_PREFIX) return reply.redirect(`${DOCS_PREFIX.slice(1)}/${query === undefined ? '' : `?${query}`}`)
        },
      },
    })
  })
}

export default fp(docs, { name: 'docs' })
