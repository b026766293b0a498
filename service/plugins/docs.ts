/** Swagger UI at `/docs`, and the contract at `/docs/json` and `/docs/yaml` with exact integers. @module */
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'lossless-json'
import type { OpenApiDocument } from '../contract.ts'

export const DOCS_PREFIX = '/docs'

async function docs(app: FastifyInstance, { document }: { document: unknown }): Promise<void> {
  await app.register(async (docs) => {
    docs.setReplySerializer((payload) => stringify(payload) as string)
    await docs.register(swagger, { mode: 'static', specification: { document: document as OpenApiDocument } })
    await docs.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      // No top bar: its "Explore" field would load other documents into the service's page.
      uiConfig: { layout: 'BaseLayout' },
      // A relative redirect (RFC 9110 §10.2.2) to `docs/` keeps asset links inside a gateway's path prefix.
      uiHooks: {
        onRequest: async (request, reply) => {
          const [path, query] = request.url.split(/\?(.*)/s)
          if (path === DOCS_PREFIX)
            return reply.redirect(`${DOCS_PREFIX.slice(1)}/${query === undefined ? '' : `?${query}`}`)
        },
      },
    })
  })
}

export default fp(docs, { name: 'docs' })
