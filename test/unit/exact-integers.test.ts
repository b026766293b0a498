/**
 * The fixture's `getPlant` (GET /plants/{id}?revision=) through fastify-openapi-glue: int64 parameters handed over as
 * exact bigints.
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
  'an int64 parameter is handed over as the exact bigint it spells; one not a decimal integer in int64 is 400 naming it',
  async (t) => {
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
    const none = 'undefined:undefined:undefined'
    for (const [id, query, tag] of [
      ['1', '', none],
      ['0', '?revision=-3', '-3:bigint:undefined'],
      ['9223372036854775807', '', none],
      ['-9223372036854775808', '?revision=9007199254740993', '9007199254740993:bigint:undefined'],
      ['2', '?note=01', 'undefined:undefined:string'],
    ] as const) {
      const response = await app.inject({ url: `/plants/${id}${query}` })
      t.strictSame([response.statusCode, response.json()], [200, { name: `${id}:bigint`, tag }], id + query)
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
