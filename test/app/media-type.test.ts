/** The body of `POST /plants`: `application/json` in UTF-8 or 415; malformed, too deep or repeated names 400; 413. */
import t, { type Test } from 'tap'
import { UNSUPPORTED_MEDIA_TYPE } from '../../service/errors.ts'
import { MAX_DEPTH, UTF8_ONLY } from '../../service/plugins/exact-json/index.ts'
import { build, JSON_HEADERS } from '../helpers/app.ts'
import { postPlant } from '../helpers/post-plant.ts'

const PLANT = '{"id":1,"name":"Fern","tag":"shade"}'

// Each test stores ids of its own, PLANT only as a replay.
const app = await build(t, { bodyLimit: 1024 })

/** POSTs `payload` with `contentType`, checked against the contract. */
const send = (t: Test, contentType: string | undefined, payload?: string | Buffer) =>
  postPlant(app, payload, { t, headers: { ...JSON_HEADERS, 'content-type': contentType } })
const sendJson = (t: Test, payload: string | Buffer) => send(t, 'application/json', payload)

t.test('application/json in UTF-8 is accepted, the media type case-insensitive (RFC 9110 §8.3.1)', async (t) => {
  for (const type of [
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset="UTF-8"',
    'application/json;charset=utf8',
    'Application/JSON',
  ])
    t.strictSame((await send(t, type, PLANT)).json(), { name: 'Fern', tag: 'shade' }, type)
})

t.test('another media type, or none, is 415; so are another charset and unparsable parameters', async (t) => {
  for (const [type, payload] of [
    ...['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'application/json-patch+json'].map(
      (type) => [type, PLANT],
    ),
    [undefined, PLANT],
    [undefined, undefined],
  ])
    t.strictSame((await send(t, type, payload)).json(), { error: 415, message: UNSUPPORTED_MEDIA_TYPE }, `${type}`)
  for (const charset of ['iso-8859-1', 'latin1', 'utf-16', 'us-ascii', ''])
    t.strictSame(
      (await send(t, `application/json; charset${charset && '='}${charset}`, PLANT)).json(),
      { error: 415, message: UTF8_ONLY },
      charset,
    )
})

t.test('malformed JSON, an empty body, a repeated member name, garbage after the JSON: 400', async (t) => {
  for (const payload of [
    '{"id":1,"name":"Fern"',
    '',
    '{"id":1,"name":"Fern","name":"Moss"}',
    '{"id":1,"id":2,"name":"Fern"}',
    '{"id":1,"name":"Fern"} x',
  ])
    t.match((await sendJson(t, payload)).json(), { error: 400, message: /^Body is not valid JSON/ }, payload)
})

t.test('bytes that are not UTF-8 are 400, and nothing is stored in their place', async (t) => {
  for (const bytes of [[0xe9], [0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
    const body = Buffer.concat([Buffer.from('{"id":500,"name":"caf'), Buffer.from(bytes), Buffer.from('"}')])
    t.strictSame(
      (await sendJson(t, body)).json(),
      { error: 400, message: 'Body is not valid UTF-8 (RFC 8259 §8.1)' },
      Buffer.from(bytes).toString('hex'),
    )
  }
  t.strictSame(
    (await sendJson(t, Buffer.from('{"id":500,"name":"café"}'))).json(),
    { name: 'café' },
    'the same id in UTF-8 is a new plant',
  )
})

t.test(`nesting deeper than ${MAX_DEPTH} levels is 400, beside an id past 2^53 too, however deep`, async (t) => {
  const deep = await build(t, { bodyLimit: 65536 })
  const nested = (depth: number) => `{"id":9007199254740993,"name":"deep","x":${'['.repeat(depth)}${']'.repeat(depth)}}`
  t.equal((await postPlant(deep, nested(MAX_DEPTH - 1), { t })).statusCode, 200, `${MAX_DEPTH} levels in all are read`)
  for (const depth of [MAX_DEPTH, 30_000])
    t.strictSame(
      (await postPlant(deep, nested(depth), { t })).json(),
      { error: 400, message: `Body nests arrays and objects deeper than ${MAX_DEPTH} levels` },
      `${depth + 1} levels`,
    )
  t.equal(
    (await postPlant(deep, `{"id":2,"name":"\\"${'['.repeat(1000)}"}`, { t })).statusCode,
    200,
    'brackets inside a string are text',
  )
})

t.test(
  'extra members, __proto__ and constructor among them, are ignored, never stored, Object.prototype untouched',
  async (t) => {
    for (const [id, extra] of [
      [10, '"__proto__":{"polluted":"yes","tag":"inherited"}'],
      [11, '"constructor":{"prototype":{"polluted":"yes","tag":"inherited"}}'],
      [13, '"color":"green","tags":["inherited"]'],
    ]) {
      const plant = `{"id":${id},"name":"Fern"`
      t.strictSame((await sendJson(t, `${plant},${extra}}`)).json(), { name: 'Fern' }, 'none of it in the Plant')
      t.equal((await sendJson(t, `${plant}}`)).statusCode, 200, 'stored as {id, name}: the plain plant replays')
      t.equal((await sendJson(t, `${plant},"tag":"inherited"}`)).statusCode, 409, 'the tag inside was not stored')
    }
    t.strictSame(
      (await sendJson(t, '{"id":12,"__proto__":{"name":"Fern","tag":"inherited"}}')).json(),
      { error: 400, message: "body must have required property 'name'" },
      'a name only inside __proto__ is no name',
    )
    for (const name of ['polluted', 'tag', 'name'])
      t.notOk(Object.prototype.hasOwnProperty.call(Object.prototype, name), `Object.prototype has no ${name}`)
  },
)

t.test('a body over BODY_LIMIT is 413; one of exactly BODY_LIMIT bytes is accepted', async (t) => {
  const atLimit = `{"id":20,"name":"${'a'.repeat(1024 - '{"id":20,"name":""}'.length)}"}`
  t.equal(Buffer.byteLength(atLimit), 1024)
  t.equal((await sendJson(t, atLimit)).statusCode, 200)
  t.match((await sendJson(t, atLimit.replace('"a', '"aa'))).json(), { error: 413, message: String })
})
