/**
 * The exact-integer rule (integers.ts, hand-over.ts): how number literals are read for validation, the `int64`
 * format, and what handlers receive: every `int64` member of a body or parameter as its exact `bigint`.
 *
 * @module
 */
import Fastify, { type FastifyRequest, type onRequestHookHandler, type RouteOptions } from 'fastify'
import t from 'tap'
import { parseJsonBody } from '../body.ts'
import { exactInt64 } from '../hand-over.ts'
import { ajvOptions } from '../index.ts'
import { forValidation, int64Format, numberOf } from '../integers.ts'

const OUT_OF_INT64 = 2 ** 63 + 2048
const int64 = { type: 'integer', format: 'int64' } as const

/** What a handler of a route whose body has the `int64` member `id` receives for the JSON `{"id": literal}`. */
function handedOver(literal: string, schema: object = { properties: { id: int64 } }) {
  const route = routeOf({ body: { content: { 'application/json': { schema } } } })
  const request = { body: parseJsonBody(`{"id":${literal}}`) }
  run(route.preHandler, request)
  return (request.body as { id: unknown }).id
}

/** The number validation sees for a literal. */
const validated = (literal: string) => forValidation({ id: numberOf(literal) }, 'id')

/** `schema` as a route's, after the hook. */
function routeOf(schema: object) {
  const route = { method: 'POST', url: '/', handler: () => {}, schema } as RouteOptions
  exactInt64(route)
  return route
}

/** Runs a route's `hooks` on `request`. */
const run = (hooks: RouteOptions['preHandler'], request: object) =>
  [hooks]
    .flat()
    .forEach((hook) => (hook as onRequestHookHandler).call(Fastify(), request as never, {} as never, () => {}))

t.test(
  'literals: safe integers are numbers, larger ones validated as their nearest double; each handed over exactly',
  async (t) => {
    for (const literal of '0 -1 9007199254740991 -9007199254740991 1.0 1e2 12.5e1 0.0 -0.0e10 0.00e-5 -0.0e-3'.split(
      ' ',
    )) {
      t.equal(numberOf(literal), Number(literal) + 0, literal)
      t.equal(handedOver(literal), BigInt(Number(literal)), literal)
    }
    const large = '9007199254740993 9007199254740992 -9007199254740993 9223372036854775807 -9223372036854775808'
      .concat(' 1152921504606846977')
      .split(' ')
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
  'a non-integral literal whose double is an integer is NaN; a long literal is read exactly, however padded',
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
    for (const literal of ['1e1000000', '-1e1000000', `0.${'0'.repeat(80)}1e1000000`, `1e${'9'.repeat(97)}`])
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
  t.strictSame(handedOver('{"a":5}', { properties: { id: { items: int64 } } }), { a: 5 }, 'an object is no array')
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
  t.throws(() => routeOf({ body: { content: { 'application/json': { schema: int64 } } } }), {
    message: 'An int64 that is a whole request part cannot be handed over exactly',
  })
})

t.test(
  "the hand-over comes after the route's own preHandler, which sees a number; a route without a schema is left alone",
  async (t) => {
    const app = Fastify({ ajv: ajvOptions })
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

t.test(
  'a route gets a reader of integer parameters, or a hand-over of int64 members, only when it has them',
  async (t) => {
    const none = routeOf({
      params: { properties: { name: { type: 'string' } } },
      querystring: { properties: { q: { type: 'number' } } },
      body: { properties: { n: { type: 'integer' } } },
    })
    t.strictSame([none.preValidation, none.preHandler], [undefined, undefined])
    const integers = routeOf({ querystring: { properties: { page: { type: ['integer', 'null'] } } } })
    t.strictSame([[integers.preValidation].flat().length, integers.preHandler], [1, undefined])
    const ids = routeOf({ body: { properties: { id: int64 } } })
    t.strictSame([ids.preValidation, [ids.preHandler].flat().length], [undefined, 1])
  },
)

t.test('only plain decimal strings of integer parameters are read: not the body, not other members', async (t) => {
  const route = routeOf({
    params: { properties: { id: { type: 'integer' }, name: { type: 'string' } } },
    querystring: { properties: { page: { type: 'integer' } } },
    body: { properties: { n: { type: 'integer' } } },
  })
  const request = { params: { id: '5', name: '6' }, query: { page: ['7'] }, body: { n: '8' } }
  run(route.preValidation, request)
  t.strictSame(request, { params: { id: 5, name: '6' }, query: { page: ['7'] }, body: { n: '8' } })
})
