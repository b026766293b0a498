/**
 * The exact-integer rule wired as the application wires its contract: every `int64` path or query
 * parameter of the fixture contract's `getPlant` (GET /plants/{id}?revision=) handed over as its exact
 * `bigint`, through fastify-openapi-glue. The rule itself: service/plugins/exact-json/test/.
 *
 * @module
 */
import Fastify, { type FastifyRequest } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import t from 'tap'
import { AJV_OPTIONS } from '../../service/app.ts'
import { errorBody } from '../../service/errors.ts'
import strictHttp from '../../service/plugins/strict-http/index.ts'
import exactJson from '../../service/plugins/exact-json/index.ts'
import { fixtureContract } from '../fixtures/plant-contract.ts'

type GetPlant = FastifyRequest<{ Params: { id: bigint }; Querystring: { revision?: bigint; note?: unknown } }>

t.test(
  'an int64 path or query parameter is handed over as the exact bigint it spells; one not a plain decimal integer, ' +
    'or outside int64, is 400 naming it',
  async (t) => {
    // The fixture app, wired as the application wires its contract; getPlant answers with the id and revision it
    // received, and their types.
    const app = Fastify({ ajv: AJV_OPTIONS })
    t.teardown(() => app.close())
    await app.register(strictHttp, { errorBody })
    await app.register(exactJson)
    const getPlant = async ({ params, query }: GetPlant) => ({
      name: `${params.id}:${typeof params.id}`,
      tag: `${query.revision}:${typeof query.revision}:${typeof query.note}`,
    })
    await app.register(openapiGlue, {
      specification: fixtureContract(),
      serviceHandlers: { getPlant },
      securityHandlers: { bearerAuth: () => {} },
    })
    const handed = {
      '/plants/1': { name: '1:bigint', tag: 'undefined:undefined:undefined' },
      '/plants/0?revision=-3': { name: '0:bigint', tag: '-3:bigint:undefined' },
      '/plants/9223372036854775807': { name: '9223372036854775807:bigint', tag: 'undefined:undefined:undefined' },
      '/plants/-9223372036854775808?revision=9007199254740993': {
        name: '-9223372036854775808:bigint',
        tag: '9007199254740993:bigint:undefined',
      },
      '/plants/2?note=01': { name: '2:bigint', tag: 'undefined:undefined:string' },
    }
    for (const [url, body] of Object.entries(handed)) {
      const response = await app.inject({ url })
      t.strictSame([response.statusCode, response.json()], [200, body], url)
    }
    const refused = {
      ...Object.fromEntries(
        ['1.5', '1e3', '01', '+1', '-0x1', 'one'].map((id) => [`/plants/${id}`, 'params/id must be integer']),
      ),
      '/plants/9223372036854775808': 'params/id must match format "int64"',
      '/plants/1?revision=1.0': 'querystring/revision must be integer',
      '/plants/1?revision=1&revision=2': 'querystring/revision must be integer',
    }
    for (const [url, message] of Object.entries(refused)) {
      const response = await app.inject({ url })
      t.strictSame([response.statusCode, response.json()], [400, { error: 400, message }], url)
    }
  },
)
