/** Swagger UI at `/docs`; the contract at `/docs/json`, its integers exact, and at `/docs/yaml` as written. @module */
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Contract, OpenApiDocument } from '../contract.ts'
import { stringify } from './exact-json/index.ts'

/** Where Swagger UI is served; the document at `<prefix>/json` and `<prefix>/yaml`. */
export const DOCS_PREFIX = '/docs'

async function docs(app: FastifyInstance, { exact, text }: Pick<Contract, 'exact' | 'text'>): Promise<void> {
  await app.register(async (docs) => {
    await docs.register(swagger, { mode: 'static', specification: { document: exact as OpenApiDocument } })
    // Serialized once, here: exact-json's stringify keeps every digit of a bigint.
    const json = Buffer.from(stringify(exact))
    const yaml = Buffer.from(text)
    const documents: Readonly<Record<string, (request: FastifyRequest, reply: FastifyReply) => FastifyReply>> = {
      [`${DOCS_PREFIX}/json`]: (_request, reply) => reply.type('application/json; charset=utf-8').send(json),
      [`${DOCS_PREFIX}/yaml`]: (_request, reply) => reply.type('application/x-yaml').send(yaml),
    }
    docs.addHook('onRoute', (route) => {
      route.handler = documents[route.url] ?? route.handler
    })
    // Relative (RFC 9110 §10.2.2), so a gateway's path prefix is kept; swagger-ui's own redirect is absolute.
    const redirects: Readonly<Record<string, string>> = {
      [DOCS_PREFIX]: `${DOCS_PREFIX.slice(1)}/`,
      [`${DOCS_PREFIX}/static/index.html`]: '../',
    }
    await docs.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      // No top bar: its "Explore" field would load other documents into the service's page.
      uiConfig: { layout: 'BaseLayout' },
      uiHooks: {
        onRequest: async (request, reply) => {
          const [path = '', query] = request.url.split(/\?(.*)/s)
          const location = redirects[path]
          if (location !== undefined) return reply.redirect(query === undefined ? location : `${location}?${query}`)
        },
      },
    })
  })
}

export default fp(docs, { name: 'docs' })
