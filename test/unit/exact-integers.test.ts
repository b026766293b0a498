/**
 * The exact-integer rule (service/exact-integers.ts): how number literals are read for
 * validation, the `int64` format, and what handlers receive: every `int64` member of a
 * body or parameter as its exact `bigint` (parameters through the fixture contract's
 * `getPlant`, GET /plants/{id}?revision=, wired as the application wires its contract).
 *
 * @module
 */
import Fastify, { type FastifyRequest, type onRequestHookHandler, type RouteOptions } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import t from 'tap'
import { AJV_OPTIONS } from '../../service/app.ts'
import { errorBody } from '../../service/errors.ts'
import strictHttp from '../../service/plugins/strict-http/index.ts'
import { exactInt64, forValidation, int64Format, numberOf } from '../../service/exact-integers.ts'
import { parseJsonBody } from '../../service/json-body.ts'
import { fixtureContract } from '../fixtures/plant-contract.ts'

const OUT_OF_INT64 = 2 ** 63 + 2048
const int64 = { type: 'integer', format: 'int64' } as const

/** What a handler of a route whose body has the `int64` member `id` receives for the JSON `{"id": literal}`. */
function handedOver(literal: string, schema: object = { properties: { id: int64 } }): unknown {
  const route = {
    method: 'POST',
    url: '/',
    handler: () => {},
    schema: { body: { content: { 'application/json': { schema } } } },
  } as RouteOptions
  exactInt64(route)
  const request = { body: parseJsonBody(`{"id":${literal}}`) }
  for (const hook of [route.preHandler].flat() as onRequestHookHandler[])
    hook.call(Fastify(), request as FastifyRequest, {} as never, () => {})
  return (request.body as { id: unknown }).id
}

/** The number validation sees for a literal. */
function validated(literal: string): unknown {
  return forValidation({ id: numberOf(literal) }, 'id')
}

t.test(
  'number literals: safe integers are numbers, larger ones validated as their nearest double; each handed over as its exact bigint',
  async (t) => {
    for (const literal of '0 -1 9007199254740991 -9007199254740991 1.0 1e2 12.5e1 0.0 -0.0e10'.split(' ')) {
      t.equal(numberOf(literal), Number(literal) + 0, literal)
      t.equal(handedOver(literal), BigInt(Number(literal)), literal)
    }
    const large =
      '9007199254740993 9007199254740992 -9007199254740993 9223372036854775807 -9223372036854775808 1152921504606846977'.split(
        ' ',
      )
    for (const [literal, exact] of [
      ...large.map((literal) => [literal, BigInt(literal)] as const),
      ['9.007199254740993e15', 2n ** 53n + 1n] as const,
      ['90071992547409930e-1', 2n ** 53n + 1n] as const,
    ]) {
      t.equal(numberOf(literal), exact, literal)
      t.equal(validated(literal), Number(exact), 'validation sees the nearest double')
      t.ok(int64Format.validate(validated(literal) as number), 'the int64 format accepts it')
      t.equal(handedOver(literal), exact, literal)
    }
  },
)

t.test(
  'a non-integral literal whose double is an integer is NaN; a long literal is read exactly however it is padded',
  async (t) => {
    for (const literal of [
      '9007199254740993.5',
      '123.0000000000000001',
      '1e-400',
      '1.00000000000000000001',
      `1.${'0'.repeat(97)}1`,
    ])
      t.ok(Number.isNaN(numberOf(literal)), literal.slice(0, 24))
    t.equal(numberOf('1.5'), 1.5)
    t.equal(numberOf(`1${'0'.repeat(95)}e-95`), 1, 'trailing zeros cancelled by the exponent')
    const fraction = `-0.${'0'.repeat(92)}12e-3`
    t.equal(numberOf(fraction), Number(fraction), 'a long fraction')
  },
)

t.test(
  'integers outside int64 are moved beyond ±(2^63 + 2048); the int64 format accepts exactly the doubles of int64',
  async (t) => {
    for (const literal of ['9223372036854775808', '18446744073709551616', '1e30', '1.0e300', '9'.repeat(100)])
      t.equal(validated(literal), OUT_OF_INT64, literal.slice(0, 20))
    for (const literal of ['-9223372036854775809', '-1e30']) t.equal(validated(literal), -OUT_OF_INT64, literal)
    for (const literal of ['1e1000000', '-1e1000000', `0.${'0'.repeat(80)}1e1000000`])
      t.notOk(int64Format.validate(validated(literal) as number), `a huge exponent: ${literal.slice(0, 12)}`)
    for (const value of [0, -1, 2 ** 53 + 2, 2 ** 63, -(2 ** 63)]) t.ok(int64Format.validate(value), String(value))
    for (const value of [OUT_OF_INT64, -OUT_OF_INT64, 1.5, Number.NaN, Infinity, -Infinity])
      t.notOk(int64Format.validate(value), String(value))
    t.equal(int64Format.type, 'number')
  },
)

t.test('int64 members are handed over through properties and allOf, nested, and items of arrays', async (t) => {
  const schema = {
    allOf: [{ properties: { name: { type: 'string' } } }, { properties: { id: { properties: { own: int64 } } } }],
  }
  t.strictSame(structuredClone(handedOver('{"own":9007199254740993,"other":9007199254740993}', schema)), {
    own: 9007199254740993n,
    other: 9007199254740992,
  })
  t.strictSame(
    structuredClone(handedOver('{"own":5,"other":9007199254740993}', schema)),
    { own: 5n, other: 9007199254740992 },
    'a safe member beside an unsafe one',
  )
  t.equal(handedOver('"text"', schema), 'text', 'a value validation would refuse is left alone')
  t.equal(handedOver('null', schema), null)
  const array = { properties: { id: { type: 'array', items: { properties: { own: int64 } } } } }
  t.strictSame(
    structuredClone(handedOver('[{"own":9007199254740993},{"own":1},{"other":9007199254740993}]', array)),
    [{ own: 9007199254740993n }, { own: 1n }, { other: 9007199254740992 }],
    'items of an array',
  )
  t.strictSame(
    structuredClone(handedOver('[9007199254740993, 2]', { properties: { id: { items: int64 } } })),
    [9007199254740993n, 2n],
    'items that are int64 themselves',
  )
  t.strictSame(handedOver('{"own":1}', array), { own: 1 }, 'not an array: left alone')
})

t.test('an int64 below a keyword the hand-over does not follow stops the start, naming where', async (t) => {
  t.throws(() => handedOver('1', { properties: { ids: { items: { oneOf: [int64] } } } }), {
    message: 'An int64 below /ids/items/oneOf cannot be handed over exactly',
  })
  for (const keyword of ['prefixItems', 'oneOf', 'anyOf', 'additionalProperties']) {
    const schema = { properties: { ids: { [keyword]: keyword === 'additionalProperties' ? int64 : [int64] } } }
    t.throws(
      () => handedOver('1', schema),
      { message: `An int64 below /ids/${keyword} cannot be handed over exactly` },
      keyword,
    )
  }
  const route = {
    method: 'POST',
    url: '/',
    handler: () => {},
    schema: { body: { content: { 'application/json': { schema: int64 } } } },
  } as RouteOptions
  t.throws(() => exactInt64(route), { message: 'An int64 that is a whole request part cannot be handed over exactly' })
})

t.test(
  "the hand-over comes after the route's own preHandler, which sees a number; a route without a schema is left as it is",
  async (t) => {
    const app = Fastify({ ajv: AJV_OPTIONS })
    t.teardown(() => app.close())
    app.addHook('onRoute', exactInt64)
    const typeOfId = async (request: FastifyRequest) => typeof (request.params as { id: unknown }).id
    let seen = ''
    app.get(
      '/:id',
      {
        schema: { params: { properties: { id: int64 } } },
        preHandler: async (request) => void (seen = await typeOfId(request)),
      },
      typeOfId,
    )
    app.get('/', async () => 'plain')
    t.equal((await app.inject({ url: '/9007199254740993' })).body, 'bigint')
    t.equal(seen, 'number')
    t.equal((await app.inject({ url: '/' })).body, 'plain')
  },
)

type GetPlant = FastifyRequest<{ Params: { id: bigint }; Querystring: { revision?: bigint; note?: unknown } }>

t.test(
  'an int64 path or query parameter is handed over as the exact bigint it spells; one not a plain decimal integer, or outside int64, is 400 naming it',
  async (t) => {
    // The fixture app, wired as the application wires its contract; getPlant answers with the id and revision it received, and their types.
    const app = Fastify({ ajv: AJV_OPTIONS })
    t.teardown(() => app.close())
    await app.register(strictHttp, { errorBody })
    app.addHook('onRoute', exactInt64)
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
    for (const [url, message] of Object.entries(refused)) {
      const response = await app.inject({ url })
      t.strictSame([response.statusCode, response.json()], [400, { error: 400, message }], url)
    }
  },
)
