/**
 * Path and query parameters read by their schema (service/parameters.ts), through
 * the fixture contract's `getPlant` (GET /plants/{id}?revision=) wired as the
 * application wires the public contract: its validation options, error handler,
 * parameter reading and fastify-openapi-glue.
 *
 * @module
 */
import Fastify, { type FastifyRequest, type RouteOptions } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import t, { type Test } from 'tap'
import { AJV_OPTIONS } from '../../service/app.js'
import { errorHandler } from '../../service/errors.js'
import { exactInteger } from '../../service/json-body.js'
import { readParametersBySchema } from '../../service/parameters.js'
import { fixtureContract } from '../fixtures/plant-contract.js'

type GetPlant = FastifyRequest<{ Params: { id: number }; Querystring: { revision?: number; note?: unknown } }>

/** The fixture app; `getPlant` answers with the id and revision it received, exactly, and the types they had. */
async function fixtureApp(t: Test) {
  const app = Fastify({ ajv: AJV_OPTIONS })
  t.teardown(() => app.close())
  app.setErrorHandler(errorHandler)
  app.addHook('onRoute', readParametersBySchema)
  await app.register(openapiGlue, {
    specification: fixtureContract(),
    serviceHandlers: {
      getPlant: async ({ params, query }: GetPlant) => ({
        name: `${exactInteger(params, 'id') ?? params.id}:${typeof params.id}`,
        tag: `${exactInteger(query, 'revision') ?? query.revision}:${typeof query.revision}:${typeof query.note}`,
      }),
    },
    securityHandlers: { bearerAuth: () => {} },
  })
  return app
}

t.test('an integer path or query parameter is read as the integer it spells, exactly within int64', async (t) => {
  const app = await fixtureApp(t)
  const cases = {
    '/plants/1': { name: '1:number', tag: 'undefined:undefined:undefined' },
    '/plants/0?revision=-3': { name: '0:number', tag: '-3:number:undefined' },
    '/plants/9223372036854775807': { name: '9223372036854775807:number', tag: 'undefined:undefined:undefined' },
    '/plants/-9223372036854775808?revision=9007199254740993': { name: '-9223372036854775808:number', tag: '9007199254740993:number:undefined' },
    '/plants/2?note=01': { name: '2:number', tag: 'undefined:undefined:string' },
  }
  for (const [url, body] of Object.entries(cases)) {
    const response = await app.inject({ url })
    t.equal(response.statusCode, 200, url)
    t.strictSame(response.json(), body, url)
  }
})

t.test('a parameter that is not a plain decimal integer, or is outside int64, is 400 naming it', async (t) => {
  const app = await fixtureApp(t)
  const cases = {
    '/plants/1.5': 'params/id must be integer',
    '/plants/1e3': 'params/id must be integer',
    '/plants/01': 'params/id must be integer',
    '/plants/+1': 'params/id must be integer',
    '/plants/-0x1': 'params/id must be integer',
    '/plants/one': 'params/id must be integer',
    '/plants/9223372036854775808': 'params/id must match format "int64"',
    '/plants/1?revision=1.0': 'querystring/revision must be integer',
    '/plants/1?revision=1&revision=2': 'querystring/revision must be integer',
  }
  for (const [url, message] of Object.entries(cases)) {
    const response = await app.inject({ url })
    t.equal(response.statusCode, 400, url)
    t.strictSame(response.json(), { error: 400, message }, url)
  }
})

t.test('reading comes before the route\'s own preValidation; a route without integer parameters is left as it is', async (t) => {
  const handler = async () => 'ok'
  const own = async () => {}
  const plain = { method: 'GET', url: '/plain', handler } as RouteOptions
  const named = { ...plain, schema: { params: { properties: { name: { type: 'string' } } } } }
  readParametersBySchema(plain)
  readParametersBySchema(named)
  t.equal(plain.preValidation, undefined)
  t.equal(named.preValidation, undefined)
  const route = { method: 'GET', url: '/:id', handler, preValidation: own, schema: { params: { properties: { id: { type: ['integer', 'null'] } } } } } as RouteOptions
  readParametersBySchema(route)
  const hooks = [route.preValidation].flat()
  t.equal(hooks.length, 2)
  t.equal(hooks[1], own)
})
