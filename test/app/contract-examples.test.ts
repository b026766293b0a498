/**
 * Each response example of openapi.yaml is provoked and its body compared exactly; the gateway's with
 * `deploy/nginx/errors.conf`.
 */
import { readFileSync } from 'node:fs'
import type { OpenAPIV3 } from 'openapi-types'
import t, { type Test } from 'tap'
import type { AppConfig } from '../../service/app.ts'
import { loadContract } from '../../service/contract.ts'
import { build, dropPlantTable, freshStore, JSON_HEADERS, listen, TOKEN } from '../helpers/app.ts'
import type { AnyResponse as Answer } from '../helpers/contract.ts'
import { freePort } from '../helpers/machine.ts'
import { type PlantBody, type PostOptions, postPlant } from '../helpers/post-plant.ts'
import { exchange, requestHead } from '../helpers/raw-http.ts'

const contract = loadContract()
const createPlant = contract.paths['/plants']!.post!

function examplesOf(content: Record<string, OpenAPIV3.MediaTypeObject> | undefined) {
  const examples = content?.['application/json']?.examples ?? {}
  return Object.fromEntries(
    Object.entries(examples).map(([name, example]) => [name, (example as OpenAPIV3.ExampleObject).value]),
  )
}

/** Each response example of `POST /plants`, keyed `<response>/<example>`. */
const responseExamples = new Map<string, { status: number; value: unknown }>()
for (const [status, response] of Object.entries(createPlant.responses)) {
  const ref = (response as OpenAPIV3.ReferenceObject).$ref
  const name = ref === undefined ? status : ref.split('/').pop()!
  const declared = (ref === undefined ? response : contract.components!.responses![name]) as OpenAPIV3.ResponseObject
  for (const [example, value] of Object.entries(examplesOf(declared.content)))
    responseExamples.set(`${name}/${example}`, { status: Number(status), value })
}

const requestExamples = examplesOf((createPlant.requestBody as OpenAPIV3.RequestBodyObject).content) as Record<
  string,
  { id: number; name: string; tag?: string }
>
const withTag = requestExamples.withTag!

/** The body the example gateway returns for `status`. */
function gatewayAnswer(status: number) {
  const errors = readFileSync(new URL('../../deploy/nginx/errors.conf', import.meta.url), 'utf8')
  const body = new RegExp(`^\\s*return ${status} '(.*)';$`, 'm').exec(errors)?.[1]
  return { answer: async (): Promise<Answer> => ({ statusCode: status, headers: {}, body: body! }) }
}

interface ErrorExample {
  error: number
  message: string
}

/** The wait an example's message names, in milliseconds. */
const waitOf = (example: ErrorExample) => Number(/retry in (\d+) seconds/.exec(example.message)![1]) * 1000

/** The example with the wait of the answer's `Retry-After`. */
function withRetryAfter(t: Test, example: ErrorExample, answer: Answer): ErrorExample {
  const seconds = Number(answer.headers['retry-after'])
  t.ok(seconds <= waitOf(example) / 1000 && seconds > 0, `Retry-After ${seconds} within the window`)
  return { ...example, message: example.message.replace(/retry in \d+ seconds/, `retry in ${seconds} seconds`) }
}

const created =
  (body: PlantBody, options: PostOptions = {}, config: Partial<AppConfig> = {}) =>
  async (t: Test) =>
    postPlant(await build(t, config), body, options)
const overSocket =
  (request: string, config: Partial<AppConfig> = {}) =>
  async (t: Test) =>
    exchange({ url: (await listen(t, config)).url }, request)
const withHeaders = (headers: Record<string, string>) =>
  created(JSON.stringify(withTag), { headers: { ...JSON_HEADERS, ...headers } })
const WRONG = { headers: { ...JSON_HEADERS, authorization: 'Bearer not-the-token-0123456789' } }
/** A create on a store that does not answer: 503. */
const storeDown = async (t: Test) =>
  created(withTag, {}, { databaseUrl: `postgres://a@127.0.0.1:${await freePort()}/b`, migrateOnStart: false })(t)

/** How each example is provoked; `expected` adjusts it to what varies. */
const provokers: Record<
  string,
  {
    answer: (t: Test, example: ErrorExample) => Promise<Answer>
    expected?: (t: Test, example: ErrorExample, answer: Answer) => ErrorExample
  }
> = {
  '200/created': { answer: created(withTag) },
  'BadRequest/wrongType': { answer: created({ ...withTag, name: 5 }) },
  'BadRequest/outOfRange': { answer: created('{"id":9223372036854775808,"name":"Monstera deliciosa"}') },
  'BadRequest/notUtf8': {
    answer: created(Buffer.from([...Buffer.from('{"id":1,"name":"caf'), 0xe9, ...Buffer.from('"}')])),
  },
  'BadRequest/tooDeep': {
    answer: created(`{"id":1,"name":"Monstera deliciosa","x":${'['.repeat(100)}${']'.repeat(100)}}`),
  },
  'UnsupportedMediaType/charset': { answer: withHeaders({ 'content-type': 'application/json; charset=iso-8859-1' }) },
  'UnsupportedMediaType/contentCoding': { answer: withHeaders({ 'content-encoding': 'gzip' }) },
  'Unauthorized/missing': { answer: created(withTag, { headers: { 'content-type': 'application/json' } }) },
  'Conflict/conflict': {
    answer: async (t) => {
      const app = await build(t)
      t.equal((await postPlant(app, withTag)).statusCode, 200, 'the request example is stored')
      return postPlant(app, { ...withTag, name: 'Ficus lyrata' })
    },
  },
  'ContentTooLarge/tooLarge': { answer: created({ ...withTag, name: 'x'.repeat(300) }, {}, { bodyLimit: 256 }) },
  'UnsupportedMediaType/unsupported': { answer: withHeaders({ 'content-type': 'text/plain' }) },
  'TooManyRequests/rateLimited': {
    answer: async (t, example) => {
      const app = await build(t, { rateLimitMax: 1, rateLimitWindowMs: waitOf(example) })
      t.equal((await postPlant(app, withTag)).statusCode, 200, 'the budget: one request')
      return postPlant(app, withTag)
    },
    expected: withRetryAfter,
  },
  'TooManyRequests/authenticationFailures': {
    answer: async (t, example) => {
      const app = await build(t, { authFailureLimitMax: 1, authFailureLimitWindowMs: waitOf(example) })
      t.equal((await postPlant(app, withTag, WRONG)).statusCode, 401, 'the budget: one failure')
      return postPlant(app, withTag, WRONG)
    },
    expected: withRetryAfter,
  },
  'RequestTimeout/timeout': {
    answer: overSocket(requestHead('POST', '/plants', { Authorization: `Bearer ${TOKEN}` }), { headersTimeoutMs: 300 }),
  },
  'RequestHeaderFieldsTooLarge/tooLarge': {
    answer: overSocket(
      `${requestHead('POST', '/plants', { 'X-Big': 'a'.repeat(17_000), 'Content-Length': '2' })}\r\n{}`,
    ),
  },
  'InternalServerError/internal': {
    answer: async (t) => {
      const store = await freshStore(t)
      const app = await build(t, store)
      await dropPlantTable(store)
      return postPlant(app, withTag)
    },
  },
  'ServiceUnavailable/storeDown': { answer: storeDown },
  'BadRequest/unknownMethod': {
    answer: overSocket(`${requestHead('BREW', '/plants', { Authorization: `Bearer ${TOKEN}` })}\r\n`),
  },
  'BadRequest/connect': { answer: overSocket('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n') },
  'UriTooLong/tooLong': gatewayAnswer(414),
  'NotImplemented/transferEncoding': gatewayAnswer(501),
  'BadGateway/unreachable': gatewayAnswer(502),
  'GatewayTimeout/timeout': gatewayAnswer(504),
  'HttpVersionNotSupported/version': gatewayAnswer(505),
  'TooManyRequests/gateway': gatewayAnswer(429),
}

t.test('every response example has a way to provoke it, and every provoker its example', async (t) => {
  t.strictSame([...responseExamples.keys()].sort(), Object.keys(provokers).sort())
})

for (const [key, { status, value }] of responseExamples) {
  const provoker = provokers[key]
  if (provoker === undefined) continue
  t.test(`${key}: the service answers ${status} with the example`, async (t) => {
    const example = value as ErrorExample
    const answer = await provoker.answer(t, example)
    t.equal(answer.statusCode, status, 'the status the example is declared for')
    t.strictSame(JSON.parse(answer.body), provoker.expected?.(t, example, answer) ?? example, 'the body, exactly')
  })
}

t.test('each request example of createPlant is stored and answered 200 with its Plant', async (t) => {
  t.ok(Object.keys(requestExamples).length > 0)
  for (const [name, { id, ...plant }] of Object.entries(requestExamples)) {
    const app = await build(t)
    // Raw JSON text: ids beyond 2^53 are exact only there.
    const response = await postPlant(app, `{"id":${BigInt(id).toString()},${JSON.stringify(plant).slice(1)}`)
    t.equal(response.statusCode, 200, name)
    t.strictSame(response.json(), plant, name)
  }
})

t.test('the header examples are what the service sends', async (t) => {
  const examples = (header: unknown) => ((header as OpenAPIV3.HeaderObject).schema as { examples: unknown[] }).examples
  const challenge = (contract.components!.responses!.Unauthorized as OpenAPIV3.ResponseObject).headers!
  const wrongToken = await created(withTag, WRONG)(t)
  t.strictSame(examples(challenge['WWW-Authenticate']), [wrongToken.headers['www-authenticate']], 'WWW-Authenticate')
  const unavailable = await storeDown(t)
  t.strictSame(
    examples(contract.components!.headers!['Retry-After']),
    [Number(unavailable.headers['retry-after'])],
    'Retry-After of a 503',
  )
})

t.test("the Error schema's examples are among the response examples", async (t) => {
  const error = contract.components!.schemas!.Error as OpenAPIV3.SchemaObject
  const errorExamples = [...responseExamples.values()].map(({ value }) => value as ErrorExample)
  const examples = (name: 'error' | 'message') => (error.properties![name] as { examples: unknown[] }).examples
  for (const name of ['error', 'message'] as const) {
    const given = new Set(errorExamples.map((example) => example[name]))
    for (const value of examples(name)) t.ok(given.has(value as never), `${name} ${String(value)}`)
  }
})
