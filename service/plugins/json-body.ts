/** JSON-only bodies: Fastify's parsers out, json-body.ts's in. @module */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { parseJsonBody, requireUtf8 } from '../json-body.ts'

async function jsonBody(app: FastifyInstance): Promise<void> {
  // Any other media type, or a body without one, is 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      // A parser runs only for a request with a Content-Type.
      requireUtf8(request.headers['content-type'] as string)
      done(null, parseJsonBody(body as Buffer))
    } catch (error) {
      done(error as Error)
    }
  })
}

export default fp(jsonBody, { name: 'json-body' })
