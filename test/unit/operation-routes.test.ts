/**
 * What service/operations/index.ts adds to glue's routes (security before the body is read, required bodies), on a
 * bare Fastify with fastify-openapi-glue.
 *
 * @module
 */
import { request as httpRequest } from 'node:http'
import Fastify from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import t, { type Test } from 'tap'
import { createApp } from '../../service/app.ts'
import { loadContractReadings, type OpenApiDocument } from '../../service/contract.ts'
import { HttpError, UNSUPPORTED_MEDIA_TYPE } from '../../service/errors.ts'
import { authenticateBeforeBody, operationSets } from '../../service/operations/index.ts'
import { PlantService } from '../../service/operations/plant-service.ts'
import { freshStore, testConfig } from '../helpers/app.ts'

/** A contract of one operation, POST /x `op` with a required body, under `security`; schemes a, b and c. */
const contract = (security?: OpenApiDocument['security']): OpenApiDocument => ({
  openapi: '3.1.0',
  info: { title: 'x', version: '1' },
  paths: {
    '/x': {
      post: {
        operationId: 'op',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', required: ['n'], properties: { n: {} } } } },
        },
        responses: { 200: { description: 'done' } },
      },
    },
  },
  components: { securitySchemes: { a: bearer, b: bearer, c: bearer } },
  security,
})
const bearer = { type: 'http', scheme: 'bearer' } as const
const accept = async () => {}
const refuse = (status: number) => async () => {
  throw new HttpError(status, `refused ${status}`)
}

/** glue over `contract(security)` with `securityHandlers`, moved by authenticateBeforeBody; counts bodies parsed. */
async function glued(security: OpenApiDocument['security'], securityHandlers: object) {
  const app = Fastify()
  const parsed = { bodies: 0, handedOver: 0 }
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    parsed.bodies++
    done(null, JSON.parse(String(body)))
  })
  // As exact-json's hand-over: a preHandler after glue's security.
  app.addHook('onRoute', (route) => {
    route.preHandler = [
      route.preHandler ?? [],
      async function handOver() {
        parsed.handedOver++
      },
    ].flat()
  })
  // As strict-http does: no 100 Continue from Node itself.
  app.server.on('checkContinue', (request, response) => app.server.emit('request', request, response))
  const specification = contract(security)
  await app.register(async (routes) => {
    const sets = operationSets(specification)
    routes.addHook('onRoute', (route) => authenticateBeforeBody(route, sets))
    await routes.register(openapiGlue, {
      specification,
      serviceHandlers: { op: async () => ({ ok: true }) },
      securityHandlers,
    })
  })
  const post = (payload?: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    app.inject({ method: 'POST', url: '/x', headers, payload })
  /** A real POST with `Expect: 100-continue`: whether 100 came before the answer, and the answer's status. */
  const expectContinue = async (t: Test) => {
    t.teardown(() => app.close())
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    return new Promise<[boolean, number | undefined]>((resolve, reject) => {
      const request = httpRequest(`${url}/x`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', expect: '100-continue', 'content-length': 7 },
      })
      let invited = false
      request.on('continue', () => request.end('{"n":1}', () => (invited = true)))
      request.on('response', (response) => resolve([invited, response.resume().statusCode]))
      request.on('error', reject)
      request.setTimeout(5000, () => resolve([invited, undefined]))
    })
  }
  return { post, parsed, expectContinue, routes: () => app.printRoutes({ includeHooks: true, commonPrefix: false }) }
}

t.test("glue's AND/OR of requirements: one whose every scheme accepts; else the first failure", async (t) => {
  const requirements: OpenApiDocument['security'] = [{ a: [], b: [] }, { c: [] }]
  const neither = await glued(requirements, { a: accept, b: refuse(401), c: refuse(403) })
  t.match(await neither.post('{"n":1}'), { statusCode: 401, body: /refused 401/ }, 'the first failure, unwrapped')
  const either = await glued(requirements, { a: accept, b: refuse(401), c: accept })
  t.equal((await either.post('{"n":1}')).statusCode, 200, 'the second requirement is met')
  t.match(
    either.routes(),
    /\(onRequest\) \["authenticate\(\)"\]\n.*\(preHandler\) \["handOver\(\)"\]/,
    "one hook on request; glue's preHandler gone, another plugin's kept",
  )
})

t.test('a bad body unauthenticated is 401, never parsed', async (t) => {
  const app = await glued([{ a: [] }], { a: refuse(401) })
  for (const payload of ['{"n":', '{}', '{"n":1}']) t.equal((await app.post(payload)).statusCode, 401, payload)
  t.same(app.parsed, { bodies: 0, handedOver: 0 }, 'no body parsed')
  const open = await glued([{ a: [] }], { a: accept })
  t.equal((await open.post('{}')).statusCode, 400, 'authenticated, it is validated')
})

t.test('no requirement, or an empty one, makes an operation public', async (t) => {
  for (const security of [undefined, [], [{}, { a: [] }]] as Array<OpenApiDocument['security']>) {
    const app = await glued(security, { a: refuse(401), b: refuse(401), c: refuse(401) })
    t.equal((await app.post('{"n":1}')).statusCode, 200, JSON.stringify(security))
    t.equal(app.parsed.handedOver, 1, "another plugin's preHandler stays one")
  }
})

t.test('Expect: 100-continue: 100 Continue once accepted, a public operation at once (RFC 9110 §10.1.1)', async (t) => {
  t.strictSame(await (await glued([], { a: refuse(401) })).expectContinue(t), [true, 200], 'public')
  t.strictSame(await (await glued([{ a: [] }], { a: accept })).expectContinue(t), [true, 200], 'authenticated')
  t.strictSame(await (await glued([{ a: [] }], { a: refuse(401) })).expectContinue(t), [false, 401], 'refused: no 100')
})

t.test('a required body without Content-Type is 415 once authenticated, before any body is read', async (t) => {
  const app = await glued([{ a: [] }], { a: accept })
  t.match(await app.post(undefined, {}), { statusCode: 415, body: new RegExp(UNSUPPORTED_MEDIA_TYPE) }, 'no body')
  t.equal((await app.post('{"n":1}', {})).statusCode, 415, 'a body without its media type')
  const refusing = await glued([{ a: [] }], { a: refuse(401) })
  t.equal((await refusing.post(undefined, {})).statusCode, 401, 'unauthenticated first')
})

t.test('which operations glue guards, and which need a body, from the contract', async (t) => {
  const operation = (operationId: string, more = {}) => ({ operationId, responses: {}, ...more })
  const sets = operationSets({
    ...contract([{ a: [] }]),
    paths: {
      '/y': {
        summary: 'not an operation',
        get: operation('inherits'),
        put: operation('public', { security: [], requestBody: { content: {} } }),
        post: operation('own', { security: [{ b: [] }], requestBody: { required: true, content: {} } }),
      },
    },
  })
  t.same(sets, { guarded: new Set(['inherits', 'own']), bodyRequired: new Set(['own']) })
})

t.test('a scheme of the contract without a method of the security class fails at start-up', async (t) => {
  const readings = loadContractReadings()
  const { document } = readings
  const components = {
    ...document.components,
    securitySchemes: { ...document.components?.securitySchemes, apiKey: bearer },
  }
  await t.rejects(
    createApp(testConfig(await freshStore(t)), false, {
      contract: { ...document, components },
      documented: readings,
      service: (parts) => new PlantService(parts),
    }),
    /No security handler for the scheme apiKey/,
  )
})
