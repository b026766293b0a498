/**
 * Contract tests of the request media type and body of `POST /plants`: only
 * `application/json` (any charset, case-insensitive) is accepted, else 415 (RFC 9110
 * §15.5.16); malformed JSON and repeated member names are 400; a body over the limit
 * is 413 (RFC 9110 §15.5.14); `__proto__` members pollute nothing.
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { UNSUPPORTED_MEDIA_TYPE } from '../../service/errors.js'
import { build, contractViolations, TOKEN } from '../helpers/app.js'

const AUTHORIZATION = { authorization: `Bearer ${TOKEN}` }
const PLANT = '{"id":1,"name":"Fern","tag":"shade"}'

/** POSTs `payload` with `contentType` (none when undefined) and checks the response against the contract. */
async function send(t: Test, app: FastifyInstance, contentType: string | undefined, payload?: string) {
  const headers = contentType === undefined ? AUTHORIZATION : { ...AUTHORIZATION, 'content-type': contentType }
  const response = await app.inject({ method: 'POST', url: '/plants', headers, ...(payload === undefined ? {} : { payload }) })
  t.same(contractViolations(response), [], `${response.statusCode} conforms to the contract`)
  return response
}

for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1']) {
  t.test(`${contentType} is accepted`, async (t) => {
    const app = await build(t)
    const response = await send(t, app, contentType, PLANT)
    t.equal(response.statusCode, 200)
    t.strictSame(response.json(), { name: 'Fern', tag: 'shade' })
  })
}

t.test('the media type is matched case-insensitively (RFC 9110 §8.3.1): Application/JSON is accepted', async (t) => {
  const app = await build(t)
  const response = await send(t, app, 'Application/JSON', PLANT)
  t.equal(response.statusCode, 200)
})

for (const contentType of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'application/json-patch+json']) {
  t.test(`${contentType} is 415`, async (t) => {
    const app = await build(t)
    const response = await send(t, app, contentType, PLANT)
    t.equal(response.statusCode, 415)
    t.strictSame(response.json(), { error: 415, message: UNSUPPORTED_MEDIA_TYPE })
  })
}

t.test('a body without Content-Type is 415', async (t) => {
  const app = await build(t)
  const response = await send(t, app, undefined, PLANT)
  t.equal(response.statusCode, 415)
  t.strictSame(response.json(), { error: 415, message: UNSUPPORTED_MEDIA_TYPE })
})

t.test('a request without Content-Type and without a body is 415', async (t) => {
  const app = await build(t)
  const response = await send(t, app, undefined)
  t.equal(response.statusCode, 415)
  t.strictSame(response.json(), { error: 415, message: UNSUPPORTED_MEDIA_TYPE })
})

for (const [kind, payload] of [
  ['malformed JSON', '{"id":1,"name":"Fern"'],
  ['an empty application/json body', ''],
  ['a repeated member name', '{"id":1,"name":"Fern","name":"Moss"}'],
  ['a repeated id', '{"id":1,"id":2,"name":"Fern"}'],
  ['JSON followed by garbage', '{"id":1,"name":"Fern"} x'],
]) {
  t.test(`${kind} is 400`, async (t) => {
    const app = await build(t)
    const response = await send(t, app, 'application/json', payload)
    t.equal(response.statusCode, 400)
    t.match(response.json(), { error: 400, message: /^Body is not valid JSON/ })
  })
}

for (const payload of [
  '{"id":1,"name":"Fern","__proto__":{"polluted":"yes"}}',
  '{"id":1,"name":"Fern","constructor":{"prototype":{"polluted":"yes"}}}',
  '{"id":1,"__proto__":{"name":"Fern","tag":"inherited"}}',
]) {
  t.test(`a __proto__ or constructor member pollutes nothing: ${payload}`, async (t) => {
    const app = await build(t)
    const response = await send(t, app, 'application/json', payload)
    t.ok([200, 400].includes(response.statusCode), `200 or 400, not ${response.statusCode}`)
    t.equal(({} as { polluted?: unknown }).polluted, undefined, 'Object.prototype is untouched')
    t.notOk(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'))
    if (response.statusCode === 200) t.strictSame(response.json(), { name: 'Fern' }, 'nothing inherited reaches the Plant')
  })
}

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
