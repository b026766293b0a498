/**
 * The plugin in a bare Fastify app with a schema of its own: ids past 2^53 in and out exactly, integer
 * parameters read before the route's own hooks, the 415s and 400s with Fastify's own error handler.
 *
 * @module
 */
import { Readable } from 'node:stream'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import t, { type Test } from 'tap'
import exactJson, { addInt64Format, ajvOptions, IDENTITY_ONLY, int64Format, stringify, UTF8_ONLY } from '../index.ts'

const int64 = { type: 'integer', format: 'int64' } as const

type Order = FastifyRequest<{
  Params: { shop: bigint }
  Querystring: { page?: number }
  Body: { id: bigint; note?: null; parent?: { child: bigint } | null; lines?: bigint[] }
}>

/** A bare app with the plugin, closed at teardown. */
async function bare(t: Test, options = {}) {
  const app = Fastify({ ajv: ajvOptions })
  t.teardown(() => app.close())
  await app.register(exactJson, options)
  return app
}

/** POSTs `payload` as JSON. */
const send = (app: FastifyInstance, payload: string | Readable, headers = {}, url = '/') =>
  app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...headers } })

async function orders(t: Test) {
  const app = await bare(t)
  const seen: string[] = []
  app.post(
    '/shops/:shop/orders',
    {
      schema: {
        params: { type: 'object', properties: { shop: int64 } },
        querystring: { type: 'object', properties: { page: { type: 'integer', minimum: 1 } } },
        body: {
          type: 'object',
          required: ['id'],
          properties: {
            id: int64,
            note: { type: 'null' },
            parent: { type: ['object', 'null'], properties: { child: int64 } },
            lines: { type: 'array', items: int64 },
          },
        },
        response: { 200: { type: 'object', properties: { shop: int64, id: int64, next: int64, child: int64 } } },
      },
      // The route's own: it sees the parameters already read as numbers.
      preValidation: async (request: Order) =>
        void seen.push(`${typeof request.params.shop}/${typeof request.query.page}`),
    },
    async ({ params, body }: Order) => ({
      shop: params.shop,
      id: body.id,
      next: body.id + 1n,
      child: body.parent?.child,
    }),
  )
  app.get('/unschemed', async (_request, reply) =>
    reply.type('application/json').send(stringify({ big: 2n ** 64n, small: 1n, list: [-(2n ** 63n)] })),
  )
  return { app, seen }
}

const post = (app: FastifyInstance, payload: string, headers = {}, url = '/shops/9007199254740993/orders?page=2') =>
  send(app, payload, headers, url)

t.test('an id past 2^53 reaches the handler as its bigint and goes back out digit for digit', async (t) => {
  const { app, seen } = await orders(t)
  const response = await post(
    app,
    '{"id":9223372036854775807,"parent":{"child":-9007199254740993},"lines":[9007199254740993]}',
  )
  t.equal(response.statusCode, 200)
  t.equal(
    response.body,
    '{"shop":9007199254740993,"id":9223372036854775807,"next":9223372036854775808,"child":-9007199254740993}',
  )
  t.strictSame(seen, ['number/number'], "the route's own preValidation sees integer parameters as numbers")
})

t.test(
  'null beside an id past 2^53, and an absent or null parent of a nested int64, are left as they are',
  async (t) => {
    const { app } = await orders(t)
    for (const payload of [
      '{"id":9007199254740993,"note":null}',
      '{"id":9007199254740993,"parent":null}',
      '{"id":9007199254740993}',
      '{"note":null,"id":9007199254740993,"lines":[]}',
    ]) {
      const response = await post(app, payload)
      t.strictSame(
        [response.statusCode, response.json()],
        [200, { shop: 9007199254740992, id: 9007199254740992, next: 9007199254740994 }],
        payload,
      )
      t.match(response.body, /"id":9007199254740993,"next":9007199254740994}$/, payload)
    }
  },
)

t.test('parameters: a plain decimal integer is read, anything else is refused by validation', async (t) => {
  const { app, seen } = await orders(t)
  t.equal((await post(app, '{"id":1}', {}, '/shops/1/orders')).statusCode, 200)
  for (const url of [
    '/shops/1.0/orders',
    '/shops/1e3/orders',
    '/shops/01/orders',
    '/shops/1/orders?page=2.0',
    '/shops/9223372036854775808/orders',
  ]) {
    const response = await post(app, '{"id":1}', {}, url)
    t.equal(response.statusCode, 400, url)
  }
  t.strictSame(seen.slice(0, 2), ['number/undefined', 'string/undefined'], 'a refused one stays a string')
})

t.test("415s and 400s through Fastify's own error handler", async (t) => {
  const { app } = await orders(t)
  const gzip = await post(app, '{"id":1}', { 'content-encoding': 'gzip' })
  t.strictSame(
    [gzip.statusCode, gzip.json().message, gzip.headers['accept-encoding']],
    [415, IDENTITY_ONLY, 'identity'],
  )
  const latin1 = await post(app, '{"id":1}', { 'content-type': 'application/json; charset=latin1' })
  t.strictSame([latin1.statusCode, latin1.json().message], [415, UTF8_ONLY])
  const identity = await post(app, '{"id":1}', { 'content-encoding': 'identity' })
  t.equal(identity.statusCode, 200, 'identity is no coding')
  const duplicate = await post(app, '{"id":1,"id":2}')
  t.strictSame([duplicate.statusCode, duplicate.json().code], [400, 'EXACT_JSON_INVALID_BODY'])
})

t.test(
  'the body is read as Fastify reads it: bodyLimit, Content-Length, several chunks, a failing stream',
  async (t) => {
    const { app } = await orders(t)
    const chunked = (...chunks: (string | Buffer)[]) => send(app, Readable.from(chunks), {}, '/shops/1/orders')
    t.equal((await chunked('{"id":', '9007199254740993}')).json().id, 9007199254740992, 'several chunks')
    const huge = Buffer.alloc(700_000, 0x20)
    const streamed = await chunked(huge, huge, '{"id":1}')
    t.strictSame([streamed.statusCode, streamed.json().code], [413, 'FST_ERR_CTP_BODY_TOO_LARGE'], 'past bodyLimit')
    const declared = await post(app, '{"id":1}', { 'content-length': String(2 ** 21) })
    t.strictSame([declared.statusCode, declared.json().code], [413, 'FST_ERR_CTP_BODY_TOO_LARGE'], 'declared')
    const short = await post(app, '{"id":1}', { 'content-length': '9' })
    t.strictSame([short.statusCode, short.json().code], [400, 'FST_ERR_CTP_INVALID_CONTENT_LENGTH'])
    // light-my-request hands the stream's error back: the parser made it the client's (400), unless it had a status.
    const failing = (error: Error) => {
      const payload: Readable = new Readable({ read: () => payload.destroy(error) })
      return send(app, payload, {}, '/shops/1/orders')
    }
    await t.rejects(failing(new Error('the client went away')), { message: 'the client went away', statusCode: 400 })
    await t.rejects(failing(Object.assign(new Error('too large'), { statusCode: 413 })), {
      message: 'too large',
      statusCode: 413,
    })
    const empty = await post(app, '')
    t.strictSame(
      [empty.statusCode, empty.json().message],
      [400, 'Body is not valid JSON: JSON value expected but reached end of input at position 0'],
      'no chunk at all',
    )
  },
)

t.test('bodyLimit itself is allowed, one byte more is not: declared and streamed', async (t) => {
  const app = await bare(t)
  app.post('/', { bodyLimit: 100 }, async () => ({ ok: true }))
  const body = (length: number) => '{"id":1}'.padEnd(length)
  const codes = async (length: number) => [
    (await send(app, body(length))).statusCode,
    (await send(app, Readable.from([body(length)]))).statusCode,
  ]
  t.strictSame(await codes(100), [200, 200], 'declared and streamed: exactly bodyLimit')
  t.strictSame(await codes(101), [413, 413], 'declared and streamed: one byte more')
})

t.test('the parser lets go of the stream once it settles, and a failing stream is a 4xx of the parser', async (t) => {
  const app = await bare(t)
  const streams: Readable[] = []
  // Past bodyLimit and never ending: only the parser can let go of it.
  const pastLimit = () => {
    const stream = new Readable({ read: () => undefined })
    stream.push(' '.repeat(101))
    return stream
  }
  app.addHook('preParsing', async (request) => {
    const kind = request.headers['x-kind']
    const stream =
      kind === 'ok'
        ? Readable.from(['{"id":1}'])
        : kind === 'large'
          ? pastLimit()
          : new Readable({
              read() {
                const status = request.headers['x-status']
                this.destroy(
                  Object.assign(
                    new Error('the stream failed'),
                    typeof status === 'string' ? { statusCode: JSON.parse(status) as unknown } : {},
                  ),
                )
              },
            })
    streams.push(stream)
    return stream
  })
  app.post('/', { bodyLimit: 100 }, async () => ({ ok: true }))
  const kind = (headers: Record<string, string>) => send(app, '{"id":1}', headers)
  t.equal((await kind({ 'x-kind': 'ok' })).statusCode, 200)
  t.equal((await kind({ 'x-kind': 'large' })).statusCode, 413)
  const statuses = []
  for (const status of [undefined, '413', '200', '"413"']) {
    const response = await kind({ 'x-kind': 'failing', ...(status === undefined ? {} : { 'x-status': status }) })
    statuses.push([response.statusCode, response.json().message])
  }
  t.strictSame(
    statuses,
    [
      [400, 'the stream failed'],
      [413, 'the stream failed'],
      [400, 'the stream failed'],
      [400, 'the stream failed'],
    ],
    "no status, or one that is not a number of 400 or more, is the client's 400",
  )
  const left = streams.map((stream) => ['data', 'end', 'error'].map((event) => stream.listenerCount(event)))
  t.strictSame(
    left,
    streams.map(() => [0, 0, 0]),
    'no listener of the parser is left on any stream',
  )
})

t.test("a preParsing stream's text chunks and receivedEncodedLength count as Fastify counts them", async (t) => {
  const app = await bare(t)
  // As a decoding stream does: text out, and the length it read from the client.
  app.addHook('preParsing', async (request) =>
    Object.assign(Readable.from(['{"id":', '9007199254740993}']), {
      receivedEncodedLength: Number(request.headers['x-encoded-length']),
    }),
  )
  app.post('/', { bodyLimit: 100, schema: { body: { type: 'object', properties: { id: int64 } } } }, (request) =>
    stringify(request.body),
  )
  const encoded = (length: number, payload = '{"id":1}') => send(app, payload, { 'x-encoded-length': String(length) })
  t.strictSame([(await encoded(8)).statusCode, (await encoded(8)).body], [200, '{"id":9007199254740993}'])
  t.equal(
    (await encoded(9)).json().code,
    'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
    'the encoded length is the one declared',
  )
  t.equal((await encoded(101)).json().code, 'FST_ERR_CTP_BODY_TOO_LARGE', 'the encoded length is held to bodyLimit')
  t.equal((await encoded(100, '{"id":1}'.padEnd(100))).statusCode, 200, 'an encoded length of exactly bodyLimit')
})

t.test(
  'a reply without a schema, sent as the text of stringify, is exact; the serializer and the format stand alone',
  async (t) => {
    const { app } = await orders(t)
    t.equal(
      (await app.inject({ url: '/unschemed' })).body,
      '{"big":18446744073709551616,"small":1,"list":[-9223372036854775808]}',
    )
    t.equal(stringify({ a: [1n, 'x', null], b: 2.5 }), '{"a":[1,"x",null],"b":2.5}')
    const formats: Record<string, unknown> = {}
    const ajv = { addFormat: (name: string, format: unknown) => void (formats[name] = format) }
    t.equal(addInt64Format(ajv), ajv)
    t.strictSame(formats, { int64: int64Format })
    t.strictSame(ajvOptions.customOptions, { coerceTypes: false })
  },
)

t.test(
  "it replaces Fastify's JSON parser; with onlyJson other media types are 415, without they are read",
  async (t) => {
    const app = await bare(t, { onlyJson: true })
    app.post('/', async (request) => ({ type: typeof (request.body as { id: unknown }).id }))
    const response = await send(app, '{"id":9007199254740993}')
    t.strictSame(response.json(), { type: 'number' }, 'no schema: validated as the nearest double')
    const text = { 'content-type': 'text/plain' }
    t.equal((await send(app, 'x', text)).statusCode, 415)
    t.ok(app.hasPlugin('exact-json'), 'named, for the dependencies of other plugins')
    t.strictSame(Reflect.get(exactJson, Symbol.for('plugin-meta')), { name: 'exact-json', fastify: '5.x' })

    const withText = await bare(t)
    withText.post('/', async (request) => request.body)
    t.equal((await send(withText, 'x', text)).body, 'x')
  },
)
