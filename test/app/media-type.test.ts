/**
 * Contract tests of the request media type and body of `POST /plants`: only
 * `application/json` in UTF-8 (RFC 8259 §8.1; media type case-insensitive) is accepted,
 * else 415 (RFC 9110 §15.5.16); bytes that are not UTF-8, malformed JSON, nesting past
 * the limit and repeated member names are 400; a body over the limit
 * is 413 (RFC 9110 §15.5.14); `__proto__` members pollute nothing.
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { UNSUPPORTED_MEDIA_TYPE } from '../../service/errors.js'
import { MAX_DEPTH, UTF8_ONLY } from '../../service/json-body.js'
import { build, JSON_HEADERS } from '../helpers/app.js'
import { postPlant } from '../helpers/post-plant.js'

const PLANT = '{"id":1,"name":"Fern","tag":"shade"}'

/** POSTs `payload` with `contentType` (none when undefined), checked against the contract. */
const send = (t: Test, app: FastifyInstance, contentType: string | undefined, payload?: string) => postPlant(app, payload, { t, headers: { ...JSON_HEADERS, 'content-type': contentType } })

// One app for the tests below that store nothing or only PLANT (sent again, a replay);
// a test that stores other content has an app of its own.
const app = await build(t)

for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/json; charset="UTF-8"', 'application/json;charset=utf8']) {
  t.test(`${contentType} is accepted`, async (t) => {
    const response = await send(t, app, contentType, PLANT)
    t.equal(response.statusCode, 200)
    t.strictSame(response.json(), { name: 'Fern', tag: 'shade' })
  })
}

t.test('the media type is matched case-insensitively (RFC 9110 §8.3.1): Application/JSON is accepted', async (t) => {
  const response = await send(t, app, 'Application/JSON', PLANT)
  t.equal(response.statusCode, 200)
})

for (const [what, contentType, payload] of [
  ...['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'application/json-patch+json'].map((type) => [type, type, PLANT]),
  ['a body without Content-Type', undefined, PLANT],
  ['a request without Content-Type and without a body', undefined, undefined],
] as Array<[string, string | undefined, string | undefined]>) {
  t.test(`${what} is 415`, async (t) => {
    const response = await send(t, app, contentType, payload)
    t.equal(response.statusCode, 415)
    t.strictSame(response.json(), { error: 415, message: UNSUPPORTED_MEDIA_TYPE })
  })
}

for (const [kind, payload] of [
  ['malformed JSON', '{"id":1,"name":"Fern"'],
  ['an empty application/json body', ''],
  ['a repeated member name', '{"id":1,"name":"Fern","name":"Moss"}'],
  ['a repeated id', '{"id":1,"id":2,"name":"Fern"}'],
  ['JSON followed by garbage', '{"id":1,"name":"Fern"} x'],
]) {
  t.test(`${kind} is 400`, async (t) => {
    const response = await send(t, app, 'application/json', payload)
    t.equal(response.statusCode, 400)
    t.match(response.json(), { error: 400, message: /^Body is not valid JSON/ })
  })
}

for (const charset of ['iso-8859-1', 'latin1', 'utf-16', 'us-ascii']) {
  t.test(`application/json; charset=${charset} is 415: JSON is UTF-8 (RFC 8259 §8.1)`, async (t) => {
    const response = await send(t, app, `application/json; charset=${charset}`, PLANT)
    t.equal(response.statusCode, 415)
    t.strictSame(response.json(), { error: 415, message: UTF8_ONLY })
  })
}

t.test('a Content-Type whose parameters cannot be parsed is 415', async (t) => {
  const response = await send(t, app, 'application/json; charset', PLANT)
  t.equal(response.statusCode, 415)
  t.strictSame(response.json(), { error: 415, message: UTF8_ONLY })
})

t.test('bytes that are not UTF-8 are 400, and nothing is stored in their place', async (t) => {
  for (const bytes of [[0xe9], [0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
    const body = Buffer.concat([Buffer.from('{"id":500,"name":"caf'), Buffer.from(bytes), Buffer.from('"}')])
    const response = await postPlant(app, body, { t })
    t.equal(response.statusCode, 400, Buffer.from(bytes).toString('hex'))
    t.strictSame(response.json(), { error: 400, message: 'Body is not valid UTF-8 (RFC 8259 §8.1)' })
  }
  const stored = await postPlant(app, Buffer.from('{"id":500,"name":"café"}'), { t })
  t.equal(stored.statusCode, 200, 'the same id in UTF-8 is a new plant, not a conflict')
  t.strictSame(stored.json(), { name: 'café' })
})

t.test(`nesting deeper than ${MAX_DEPTH} levels is 400, beside an id past 2^53 too, however deep`, async (t) => {
  const nested = (depth: number) => `{"id":9007199254740993,"name":"deep","x":${'['.repeat(depth)}${']'.repeat(depth)}}`
  t.equal((await send(t, app, 'application/json', nested(MAX_DEPTH - 1))).statusCode, 200, `${MAX_DEPTH} levels in all are read`)
  for (const depth of [MAX_DEPTH, 10_000, 30_000]) {
    const response = await send(t, app, 'application/json', nested(depth))
    t.equal(response.statusCode, 400, `${depth + 1} levels`)
    t.strictSame(response.json(), { error: 400, message: `Body nests arrays and objects deeper than ${MAX_DEPTH} levels` })
  }
  const inString = `{"id":2,"name":"\\"${'['.repeat(1000)}"}`
  t.equal((await send(t, app, 'application/json', inString)).statusCode, 200, 'brackets inside a string are text')
})

/** Object.prototype has none of the members the bodies below try to plant on it. */
function unpolluted(t: Test): void {
  for (const name of ['polluted', 'tag', 'name']) t.notOk(Object.prototype.hasOwnProperty.call(Object.prototype, name), `Object.prototype has no ${name}`)
  t.equal(({} as { polluted?: unknown }).polluted, undefined, 'a new object inherits nothing')
}

// Members named __proto__ or constructor are extra members like any other: accepted
// and ignored (openapi.yaml, NewPlant), so nothing of them is stored or answered.
for (const [extra, sent] of [
  ['__proto__', '{"id":1,"name":"Fern","__proto__":{"polluted":"yes","tag":"inherited"}}'],
  ['constructor', '{"id":1,"name":"Fern","constructor":{"prototype":{"polluted":"yes","tag":"inherited"}}}'],
]) {
  t.test(`a ${extra} member is an extra member: 200 with the Plant without it, stored without it, Object.prototype untouched`, async (t) => {
    const app = await build(t)
    const response = await send(t, app, 'application/json', sent)
    t.equal(response.statusCode, 200)
    t.strictSame(response.json(), { name: 'Fern' }, 'no member of it reaches the Plant')
    unpolluted(t)
    t.equal((await send(t, app, 'application/json', '{"id":1,"name":"Fern"}')).statusCode, 200, 'stored as {id, name}: the plain plant replays')
    t.equal((await send(t, app, 'application/json', '{"id":1,"name":"Fern","tag":"inherited"}')).statusCode, 409, 'the tag inside it was not stored')
  })
}

t.test('a name only inside a __proto__ member is no name: 400 naming the missing name, Object.prototype untouched', async (t) => {
  const app = await build(t)
  const response = await send(t, app, 'application/json', '{"id":1,"__proto__":{"name":"Fern","tag":"inherited"}}')
  t.equal(response.statusCode, 400)
  t.strictSame(response.json(), { error: 400, message: "body must have required property 'name'" })
  unpolluted(t)
})

t.test('a body over BODY_LIMIT is 413; one of exactly BODY_LIMIT bytes is accepted', async (t) => {
  const app = await build(t, { bodyLimit: 1024 })
  const frame = '{"id":1,"name":""}'
  const atLimit = `{"id":1,"name":"${'a'.repeat(1024 - frame.length)}"}`
  t.equal(Buffer.byteLength(atLimit), 1024)
  t.equal((await send(t, app, 'application/json', atLimit)).statusCode, 200)
  const response = await send(t, app, 'application/json', `{"id":2,"name":"${'a'.repeat(1024 - frame.length + 1)}"}`)
  t.equal(response.statusCode, 413)
  t.match(response.json(), { error: 413, message: String })
})
