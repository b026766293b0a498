/**
 * Tests of the documentation routes: Swagger UI at `/docs`, the document at
 * `/docs/json` and `/docs/yaml` equal to openapi.yaml with every integer digit for
 * digit (so no route outside the contract, the docs' own or a 405's, is in it), public.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { parse as parseJson, parseNumberAndBigInt } from 'lossless-json'
import t from 'tap'
import { parse } from 'yaml'
import { DOCS_PREFIX } from '../../service/app.js'
import { CONTRACT_URL } from '../../service/contract.js'
import { build } from '../helpers/app.js'

/** openapi.yaml as written: every integer a bigint, so one past 2^53 keeps its digits. */
const exactContract = parse(readFileSync(CONTRACT_URL, 'utf8'), { intAsBigInt: true }) as unknown
/** One app for the file: the docs routes only read. */
const app = await build(t)

t.test('GET /docs redirects to the relative docs/, so a gateway path prefix is kept', async (t) => {
  const response = await app.inject({ method: 'GET', url: `${DOCS_PREFIX}?x=1` })
  t.equal(response.statusCode, 302)
  t.equal(response.headers.location, 'docs/?x=1')
  t.equal((await app.inject({ method: 'GET', url: DOCS_PREFIX })).headers.location, 'docs/')
})

t.test('GET /docs/ is the Swagger UI page (HTML)', async (t) => {
  const response = await app.inject({ method: 'GET', url: `${DOCS_PREFIX}/` })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^text\/html/)
  t.match(response.body, /<title>Swagger UI<\/title>/)
})

t.test('the Swagger UI page loads every asset from the service itself', async (t) => {
  const page = await app.inject({ method: 'GET', url: `${DOCS_PREFIX}/` })
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!)
  t.ok(assets.length > 0, 'the page references assets')
  for (const asset of assets) {
    t.notMatch(asset, /^(?:[a-z]+:)?\/\//i, `${asset} is not on another origin`)
    const response = await app.inject({ method: 'GET', url: new URL(asset, `http://localhost${DOCS_PREFIX}/`).pathname })
    t.equal(response.statusCode, 200, `${asset} is served`)
  }
})

t.test('GET /docs/json is openapi.yaml, every integer digit for digit', async (t) => {
  const response = await app.inject({ method: 'GET', url: `${DOCS_PREFIX}/json` })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^application\/json/)
  t.match(response.body, /"id":9007199254740993\b/, 'the withoutTag example keeps its id past 2^53')
  t.strictSame(parseJson(response.body, null, parseNumberAndBigInt), exactContract)
})

t.test('GET /docs/yaml is openapi.yaml, every integer digit for digit', async (t) => {
  const response = await app.inject({ method: 'GET', url: `${DOCS_PREFIX}/yaml` })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /yaml/)
  t.match(response.body, /\bid: 9007199254740993\b/, 'the withoutTag example keeps its id past 2^53')
  t.strictSame(parse(response.body, { intAsBigInt: true }), exactContract)
})

t.test('the docs need no token', async (t) => {
  for (const url of [`${DOCS_PREFIX}/`, `${DOCS_PREFIX}/json`, `${DOCS_PREFIX}/yaml`]) {
    const response = await app.inject({ method: 'GET', url })
    t.equal(response.statusCode, 200, url)
    t.equal(response.headers['www-authenticate'], undefined)
  }
})
