/**
 * Contract tests of the `bearerAuth` security scheme of `POST /plants`: 401 with the
 * RFC 6750 §3 challenge, scheme name case-insensitive (RFC 9110 §11.1), every
 * configured token accepted, and authentication decided before the body is read
 * (openapi.yaml, info.description "Authentication"; responses.Unauthorized).
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { build, contractViolations, OTHER_TOKEN, TOKEN } from '../helpers/app.js'

const CHALLENGE = 'Bearer realm="plant-store"'
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="plant-store", error="invalid_token"'
const WRONG_TOKEN = 'wrong-token-0123456789abcdef'
const PLANT = '{"id":1,"name":"Fern"}'

/**
 * POSTs with the given headers (JSON unless `content-type` is given; none when it is
 * `undefined`) and checks the response against the contract.
 */
async function send(t: Test, app: FastifyInstance, headers: Record<string, string | undefined>, payload = PLANT) {
  const all = Object.entries({ 'content-type': 'application/json', ...headers }).filter(
    (entry): entry is [string, string] => entry[1] !== undefined,
  )
  const response = await app.inject({ method: 'POST', url: '/plants', headers: Object.fromEntries(all), payload })
  t.same(contractViolations(response), [], `${response.statusCode} conforms to the contract`)
  return response
}

t.test('a request without Authorization is 401 with the bearer challenge and no error code (RFC 6750 §3.1)', async (t) => {
  const app = await build(t)
  const response = await send(t, app, {})
  t.equal(response.statusCode, 401)
  t.equal(response.headers['www-authenticate'], CHALLENGE)
  t.match(response.json(), { error: 401, message: String })
})

t.test('a wrong token is 401 with error="invalid_token" (RFC 6750 §3.1)', async (t) => {
  const app = await build(t)
  for (const token of [WRONG_TOKEN, TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase()]) {
    const response = await send(t, app, { authorization: `Bearer ${token}` })
    t.equal(response.statusCode, 401, token)
    t.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE)
  }
})

t.test('a 401 never echoes the token sent', async (t) => {
  const app = await build(t)
  const response = await send(t, app, { authorization: `Bearer ${WRONG_TOKEN}` })
  t.equal(response.statusCode, 401)
  t.notMatch(response.body, WRONG_TOKEN)
  t.notMatch(JSON.stringify(response.headers), WRONG_TOKEN)
})

for (const authorization of ['Basic dXNlcjpwYXNzd29yZA==', `Token ${TOKEN}`, 'Bearer']) {
  t.test(`a request without a bearer token (${authorization.split(' ')[0]}) is 401 with the bearer challenge`, async (t) => {
    const app = await build(t)
    const response = await send(t, app, { authorization })
    t.equal(response.statusCode, 401)
    t.equal(response.headers['www-authenticate'], CHALLENGE)
  })
}

t.test('the scheme name is case-insensitive (RFC 9110 §11.1): bearer and BEARER are accepted', async (t) => {
  const app = await build(t)
  for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
    const response = await send(t, app, { authorization: `${scheme} ${TOKEN}` })
    t.equal(response.statusCode, 200, scheme)
  }
})

t.test('every configured token is accepted (rotation)', async (t) => {
  const app = await build(t)
  for (const token of [TOKEN, OTHER_TOKEN]) {
    const response = await send(t, app, { authorization: `Bearer ${token}` })
    t.equal(response.statusCode, 200)
    t.strictSame(response.json(), { name: 'Fern' })
  }
})

t.test('a token that is no longer configured is refused', async (t) => {
  const app = await build(t, { tokens: [OTHER_TOKEN] })
  t.equal((await send(t, app, { authorization: `Bearer ${TOKEN}` })).statusCode, 401)
  t.equal((await send(t, app, { authorization: `Bearer ${OTHER_TOKEN}` })).statusCode, 200)
})

for (const [what, headers, payload] of [
  ['an invalid NewPlant (not 400)', {}, '{"id":"x"}'],
  ['malformed JSON (not 400)', {}, '{"id":'],
  ['a text/plain body (not 415)', { 'content-type': 'text/plain' }, PLANT],
  ['no Content-Type (not 415)', { 'content-type': undefined }, PLANT],
  ['a body over the limit (not 413)', {}, `{"id":1,"name":"${'a'.repeat(5000)}"}`],
] as const) {
  t.test(`authentication comes before the body: an unauthenticated request with ${what} is 401`, async (t) => {
    const app = await build(t, { bodyLimit: 1024 })
    for (const authorization of [undefined, `Bearer ${WRONG_TOKEN}`]) {
      const response = await send(t, app, { ...headers, ...(authorization === undefined ? {} : { authorization }) }, payload)
      t.equal(response.statusCode, 401, authorization ?? 'no Authorization')
      t.match(response.headers['www-authenticate'], /^Bearer realm="plant-store"/)
    }
  })
}
