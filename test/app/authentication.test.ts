/**
 * Contract tests of the `bearerAuth` security scheme of `POST /plants`: 401 with the
 * RFC 6750 §3 challenge, scheme name case-insensitive (RFC 9110 §11.1), every
 * configured token accepted, and authentication decided before the body is read
 * (openapi.yaml, info.description "Authentication"; responses.Unauthorized).
 *
 * @module
 */
import t from 'tap'
import { build, JSON_HEADERS, OTHER_TOKEN, TOKEN } from '../helpers/app.js'
import { postPlant, type RequestHeaders } from '../helpers/post-plant.js'

const CHALLENGE = 'Bearer realm="plant-store"'
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="plant-store", error="invalid_token"'
const WRONG_TOKEN = 'wrong-token-0123456789abcdef'
const PLANT = '{"id":1,"name":"Fern"}'

// One app for the file (but for the test of another token list): every create is PLANT, a replay after the first.
const app = await build(t, { bodyLimit: 1024 })

/** JSON headers with `authorization` as given (none when `undefined`). */
const sentWith = (authorization: string | undefined, headers: RequestHeaders = {}): RequestHeaders => ({ ...JSON_HEADERS, ...headers, authorization })

t.test('a request without Authorization is 401 with the bearer challenge and no error code (RFC 6750 §3.1)', async (t) => {
  const response = await postPlant(app, PLANT, { t, headers: sentWith(undefined) })
  t.equal(response.statusCode, 401)
  t.equal(response.headers['www-authenticate'], CHALLENGE)
  t.match(response.json(), { error: 401, message: String })
})

t.test('a wrong token is 401 with error="invalid_token" (RFC 6750 §3.1)', async (t) => {
  for (const token of [WRONG_TOKEN, TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase()]) {
    const response = await postPlant(app, PLANT, { t, headers: sentWith(`Bearer ${token}`) })
    t.equal(response.statusCode, 401, token)
    t.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE)
  }
})

t.test('a 401 never echoes the token sent', async (t) => {
  const response = await postPlant(app, PLANT, { t, headers: sentWith(`Bearer ${WRONG_TOKEN}`) })
  t.equal(response.statusCode, 401)
  t.notMatch(response.body, WRONG_TOKEN)
  t.notMatch(JSON.stringify(response.headers), WRONG_TOKEN)
})

for (const authorization of ['Basic dXNlcjpwYXNzd29yZA==', `Token ${TOKEN}`, 'Bearer']) {
  t.test(`a request without a bearer token (${authorization.split(' ')[0]}) is 401 with the bearer challenge`, async (t) => {
      const response = await postPlant(app, PLANT, { t, headers: sentWith(authorization) })
    t.equal(response.statusCode, 401)
    t.equal(response.headers['www-authenticate'], CHALLENGE)
  })
}

t.test('the scheme name is case-insensitive (RFC 9110 §11.1): bearer and BEARER are accepted', async (t) => {
  for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
    const response = await postPlant(app, PLANT, { t, headers: sentWith(`${scheme} ${TOKEN}`) })
    t.equal(response.statusCode, 200, scheme)
  }
})

t.test('every configured token is accepted (rotation)', async (t) => {
  for (const token of [TOKEN, OTHER_TOKEN]) {
    const response = await postPlant(app, PLANT, { t, headers: sentWith(`Bearer ${token}`) })
    t.equal(response.statusCode, 200)
    t.strictSame(response.json(), { name: 'Fern' })
  }
})

t.test('a token that is no longer configured is refused', async (t) => {
  const app = await build(t, { tokens: [OTHER_TOKEN] })
  t.equal((await postPlant(app, PLANT, { t, headers: sentWith(`Bearer ${TOKEN}`) })).statusCode, 401)
  t.equal((await postPlant(app, PLANT, { t, headers: sentWith(`Bearer ${OTHER_TOKEN}`) })).statusCode, 200)
})

for (const [what, headers, payload] of [
  ['an invalid NewPlant (not 400)', {}, '{"id":"x"}'],
  ['malformed JSON (not 400)', {}, '{"id":'],
  ['a text/plain body (not 415)', { 'content-type': 'text/plain' }, PLANT],
  ['no Content-Type (not 415)', { 'content-type': undefined }, PLANT],
  ['a body over the limit (not 413)', {}, `{"id":1,"name":"${'a'.repeat(5000)}"}`],
] as const) {
  t.test(`authentication comes before the body: an unauthenticated request with ${what} is 401`, async (t) => {
    for (const authorization of [undefined, `Bearer ${WRONG_TOKEN}`]) {
      const response = await postPlant(app, payload, { t, headers: sentWith(authorization, headers) })
      t.equal(response.statusCode, 401, authorization ?? 'no Authorization')
      t.match(response.headers['www-authenticate'], /^Bearer realm="plant-store"/)
    }
  })
}
