/**
 * The documentation routes: Swagger UI at `/docs`; `/docs/json` and `/docs/yaml` are openapi.yaml, digit for digit.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
import { parse as parseJson, parseNumberAndBigInt } from 'lossless-json'
import t from 'tap'
import { parse } from 'yaml'
import { DOCS_PREFIX } from '../../service/app.ts'
import { CONTRACT_URL } from '../../service/contract.ts'
import docs from '../../service/plugins/docs.ts'
import { build } from '../helpers/app.ts'

/** openapi.yaml as written: every integer a bigint, so one past 2^53 keeps its digits. */
const exactContract = parse(readFileSync(CONTRACT_URL, 'utf8'), { intAsBigInt: true }) as unknown
const app = await build(t)

t.test('GET /docs redirects to the relative docs/, so a gateway path prefix is kept', async (t) => {
  t.match(await app.inject({ url: `${DOCS_PREFIX}?x=1` }), { statusCode: 302, headers: { location: 'docs/?x=1' } })
  t.equal((await app.inject({ url: DOCS_PREFIX })).headers.location, 'docs/')
})

t.test('GET /docs/static/index.html redirects to ../, /docs/ under any path prefix', async (t) => {
  for (const [query, location] of [
    ['', '../'],
    ['?x=1', '../?x=1'],
  ]) {
    const response = await app.inject({ url: `${DOCS_PREFIX}/static/index.html${query}` })
    t.match(response, { statusCode: 302, headers: { location } })
    const behindGateway = new URL(location!, `https://gateway.example/plant-store${DOCS_PREFIX}/static/index.html`)
    t.equal(behindGateway.pathname, `/plant-store${DOCS_PREFIX}/`)
  }
})

t.test('GET /docs/ is the Swagger UI page, every asset from the service itself', async (t) => {
  const page = await app.inject({ url: `${DOCS_PREFIX}/` })
  t.match(page, { statusCode: 200, headers: { 'content-type': /^text\/html/ }, body: /<title>Swagger UI<\/title>/ })
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!)
  t.ok(assets.length > 0, 'the page references assets')
  for (const asset of assets) {
    t.notMatch(asset, /^(?:[a-z]+:)?\/\//i, `${asset} is not on another origin`)
    const response = await app.inject({ url: new URL(asset, `http://localhost${DOCS_PREFIX}/`).pathname })
    t.equal(response.statusCode, 200, `${asset} is served`)
  }
})

t.test('GET /docs/json and /docs/yaml are openapi.yaml digit for digit, with no token', async (t) => {
  for (const [format, type, read] of [
    ['json', /^application\/json/, (text: string) => parseJson(text, null, parseNumberAndBigInt)],
    ['yaml', /yaml/, (text: string) => parse(text, { intAsBigInt: true }) as unknown],
  ] as const) {
    const response = await app.inject({ url: `${DOCS_PREFIX}/${format}` })
    t.match(response, { statusCode: 200, headers: { 'content-type': type, 'www-authenticate': undefined } })
    t.match(
      response.body,
      /\bid"?: 9007199254740993\b|"id":9007199254740993\b/,
      'the withoutTag example keeps its id past 2^53',
    )
    t.strictSame(read(response.body), exactContract, format)
  }
})

t.test('the JSON is serialized at start, every digit kept; the YAML is the text as written', async (t) => {
  const exact = { openapi: '3.1.0', info: { title: 'x', version: '1' }, paths: {}, 'x-id': 2n ** 63n - 1n }
  const text = '# as written\nx-id: 9223372036854775807\n'
  const bare = Fastify()
  await bare.register(docs, { exact, text })
  await bare.ready()
  t.teardown(() => bare.close())
  exact.info.title = 'changed'
  const json = (await bare.inject({ url: `${DOCS_PREFIX}/json` })).body
  t.match(json, '"x-id":9223372036854775807', 'json: every digit')
  t.notMatch(json, 'changed', 'json: as it was at start')
  t.equal((await bare.inject({ url: `${DOCS_PREFIX}/yaml` })).body, text, 'yaml: the text, comments and all')
  for (const [format, body] of [
    ['json', json],
    ['yaml', text],
  ] as const) {
    const head = await bare.inject({ method: 'HEAD', url: `${DOCS_PREFIX}/${format}` })
    t.equal(head.headers['content-length'], String(Buffer.byteLength(body)), `${format}: HEAD`)
  }
})
