/** `bearerAuth`: 401 with the RFC 6750 challenge, the scheme case-insensitive, decided before the body is read. */
import t from 'tap'
import { build, JSON_HEADERS, OTHER_TOKEN, TOKEN } from '../helpers/app.ts'
import { postPlant, type RequestHeaders } from '../helpers/post-plant.ts'

const CHALLENGE = 'Bearer realm="plant-store"'
const WRONG_TOKEN = 'wrong-token-0123456789abcdef'
const PLANT = '{"id":1,"name":"Fern"}'

// Every create is PLANT.
const app = await build(t, { bodyLimit: 1024 })

const sentWith = (authorization: string | undefined, headers: RequestHeaders = {}): RequestHeaders => ({
  ...JSON_HEADERS,
  ...headers,
  authorization,
})

t.test(
  'no bearer token is 401 with the challenge, no error code; a wrong one error="invalid_token", never echoed',
  async (t) => {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNzd29yZA==', `Token ${TOKEN}`, 'Bearer']) {
      const response = await postPlant(app, PLANT, { t, headers: sentWith(authorization) })
      t.equal(response.headers['www-authenticate'], CHALLENGE, String(authorization))
      t.match(response.json(), { error: 401, message: String })
    }
    for (const token of [WRONG_TOKEN, TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase()]) {
      const response = await postPlant(app, PLANT, { t, headers: sentWith(`Bearer ${token}`) })
      t.equal(response.headers['www-authenticate'], `${CHALLENGE}, error="invalid_token"`, token)
      t.notMatch(response.body + JSON.stringify(response.headers), token, 'the token is not echoed')
    }
  },
)

t.test(
  'the scheme is case-insensitive; every configured token accepted; one no longer configured refused',
  async (t) => {
    const send = async (to: typeof app, authorization: string) =>
      postPlant(to, PLANT, { t, headers: sentWith(authorization) })
    for (const authorization of [`bearer ${TOKEN}`, `BEARER ${TOKEN}`, `BeArEr ${TOKEN}`, `Bearer ${OTHER_TOKEN}`])
      t.strictSame((await send(app, authorization)).json(), { name: 'Fern' }, authorization)
    const rotated = await build(t, { tokens: [OTHER_TOKEN] })
    t.equal((await send(rotated, `Bearer ${TOKEN}`)).statusCode, 401)
    t.equal((await send(rotated, `Bearer ${OTHER_TOKEN}`)).statusCode, 200)
  },
)

t.test('an unauthenticated request is 401 whatever its body', async (t) => {
  for (const [what, headers, payload] of [
    ['an invalid NewPlant (not 400)', {}, '{"id":"x"}'],
    ['malformed JSON (not 400)', {}, '{"id":'],
    ['a text/plain body (not 415)', { 'content-type': 'text/plain' }, PLANT],
    ['no Content-Type (not 415)', { 'content-type': undefined }, PLANT],
    ['a body over the limit (not 413)', {}, `{"id":1,"name":"${'a'.repeat(5000)}"}`],
  ] as const) {
    for (const authorization of [undefined, `Bearer ${WRONG_TOKEN}`]) {
      const response = await postPlant(app, payload, { t, headers: sentWith(authorization, headers) })
      t.match(
        response,
        { statusCode: 401, headers: { 'www-authenticate': /^Bearer realm="plant-store"/ } },
        `${what}, ${authorization ?? 'no Authorization'}`,
      )
    }
  }
})
