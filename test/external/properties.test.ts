/**
 * fast-check properties of createPlant; `FC_SEED`, `FC_NUM_RUNS` (100), `FC_TIME_LIMIT_MS` (per property, 8000). Replay
 * a failure: `FC_SEED=<seed> FC_PATH=<path> npx tap <this file> --grep '<test name>'`.
 */
import { deepStrictEqual, equal } from 'node:assert/strict'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { build, JSON_HEADERS, OTHER_TOKEN } from '../helpers/app.ts'
import { contractViolations, schemaAt } from '../helpers/contract.ts'
import { postPlant } from '../helpers/post-plant.ts'

const { FC_SEED, FC_NUM_RUNS, FC_TIME_LIMIT_MS, FC_PATH: PATH } = process.env
const TIME_LIMIT_MS = Number(FC_TIME_LIMIT_MS || 8000)
const BODY_LIMIT = 65536

t.setTimeout(4 * TIME_LIMIT_MS + 30_000)

/** Asserts that a property held on at least one run. */
async function holds<T>(t: Test, property: fc.IAsyncPropertyWithHooks<T>) {
  const details = await fc.check(property, {
    seed: Number(FC_SEED || 20260521),
    numRuns: Number(FC_NUM_RUNS || 100),
    interruptAfterTimeLimit: TIME_LIMIT_MS,
    markInterruptAsFailure: false,
    ...(PATH === undefined ? {} : { path: PATH, endOnFailure: true }),
  })
  const report = fc.defaultReportMessage(details)
  t.notOk(details.failed, `holds (seed ${details.seed}, ${details.numRuns} runs)`, { report })
  t.ok(details.numRuns > 0, 'checked on at least one input')
}

const isNewPlant = schemaAt('#/components/schemas/NewPlant')
/** The signed 64-bit range of `format: int64` (OpenAPI 3.1 §4.4). */
const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n }

const jsonBytes = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2
const rightToLeft = fc.constantFrom(...'\u05D0\u05B8 \u05E9 \u0627\u0644 \u0645 \u200F \u202E \u2067 \u061C'.split(' '))
const astral = fc.integer({ min: 0x10000, max: 0x10ffff }).map((code) => String.fromCodePoint(code))
const oneOf = (unit: 'binary' | 'grapheme') => fc.string({ unit, minLength: 1, maxLength: 1 })
const unit = fc.oneof(oneOf('binary'), oneOf('grapheme'))
const anyText = (maxLength: number) => fc.string({ unit: fc.oneof(unit, rightToLeft, astral), maxLength })
/** A string filling `min`..`max` bytes of JSON text: a short piece repeated. */
const longText = (min: number, max: number) =>
  fc
    .tuple(
      anyText(4).filter((piece) => piece !== ''),
      fc.integer({ min, max }),
    )
    .map(([piece, bytes]) => piece.repeat(Math.max(1, Math.floor(bytes / jsonBytes(piece)))))
const text = fc.oneof(
  { arbitrary: anyText(40), weight: 5 },
  { arbitrary: fc.constant(''), weight: 1 },
  { arbitrary: longText(BODY_LIMIT - 3000, BODY_LIMIT - 200), weight: 1 },
)

interface Generated {
  id: bigint
  name: string
  tag?: string
  extras: Record<string, unknown>
}
/** Whether NewPlant accepts it (the id is drawn from int64). */
const allowed = (p: Generated) =>
  isNewPlant({ ...p.extras, id: 0, name: p.name, ...(p.tag === undefined ? {} : { tag: p.tag }) })

const newPlant: fc.Arbitrary<Generated> = fc
  .record(
    {
      id: fc.oneof(
        { arbitrary: fc.bigInt(INT64), weight: 9 },
        fc.constantFrom(INT64.min, INT64.max, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 0n),
      ),
      name: text,
      tag: text,
      extras: fc.dictionary(
        fc.string().filter((key) => !['id', 'name', 'tag'].includes(key)),
        fc.jsonValue({ maxDepth: 2 }),
        { maxKeys: 2 },
      ),
    },
    { requiredKeys: ['id', 'name', 'extras'] },
  )
  .filter(allowed)

type Member = [string, string]
/** JSON text of members in the given order, the id written exactly; `space` between tokens. */
function jsonText(members: Member[], space = '') {
  return `{${space}${members.map(([key, value]) => `${JSON.stringify(key)}${space}:${space}${value}`).join(`,${space}`)}${space}}`
}
const members = (p: Generated): Member[] => [
  ['id', p.id.toString()],
  ['name', JSON.stringify(p.name)],
  ...(p.tag === undefined ? [] : [['tag', JSON.stringify(p.tag)] as Member]),
  ...Object.entries(p.extras).map(([key, value]): Member => [key, JSON.stringify(value)]),
]
const space = fc.constantFrom('', ' ', '\n', '\t', '\r\n  ')
/** `application/json` as a client may write it: any case (RFC 9110 §8.3.1), with or without a charset. */
const jsonMediaType = fc
  .tuple(
    fc.mixedCase(fc.constant('application/json')),
    fc.constantFrom('', '; charset=utf-8', ';charset=UTF-8', ' ; charset="utf-8"'),
  )
  .map(([type, parameters]) => type + parameters)
/** A valid NewPlant, its JSON text (members in any order, ≤ BODY_LIMIT bytes) and media type. */
const validBody = newPlant
  .chain((plant) =>
    fc.tuple(
      fc.constant(plant),
      fc.shuffledSubarray(members(plant), { minLength: members(plant).length }),
      space,
      jsonMediaType,
    ),
  )
  .map(([plant, shuffled, gap, contentType]) => ({ plant, body: jsonText(shuffled, gap), contentType }))
  .filter(({ body }) => Buffer.byteLength(body) <= BODY_LIMIT)

t.test('a valid NewPlant is answered 200 with exactly the Plant sent, and its replay the same', async (t) => {
  const app = await build(t, { bodyLimit: BODY_LIMIT })
  // Ids already taken: 409 unless identical.
  const stored = new Map<bigint, string>()
  await holds(
    t,
    fc.asyncProperty(validBody, async ({ plant, body, contentType }) => {
      const expected = plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag }
      const earlier = stored.get(plant.id)
      const status = earlier === undefined || earlier === JSON.stringify(expected) ? 200 : 409
      for (const attempt of ['first', 'replay']) {
        const response = await postPlant(app, body, { headers: { ...JSON_HEADERS, 'content-type': contentType } })
        deepStrictEqual(contractViolations(response), [], `${attempt}: the response conforms`)
        equal(response.statusCode, status, `${attempt}: status`)
        if (status === 200) deepStrictEqual(JSON.parse(response.body), expected, `${attempt}: the Plant sent`)
      }
      if (earlier === undefined) stored.set(plant.id, JSON.stringify(expected))
    }),
  )
})

interface Invalid {
  kind: string
  payload: string | Buffer
  headers: Record<string, string>
  status: 400 | 413 | 415
  id?: bigint
}
const nonString = fc.jsonValue({ maxDepth: 2 }).filter((value) => typeof value !== 'string')
const nonInteger = fc.jsonValue({ maxDepth: 2 }).filter((value) => !Number.isInteger(value))
/** Integer literals outside int64: decimals, exponents, huge exponents. */
const hugeNumber = fc.oneof(
  fc
    .oneof(fc.bigInt({ min: INT64.max + 1n, max: 10n ** 40n }), fc.bigInt({ min: -(10n ** 40n), max: INT64.min - 1n }))
    .map(String),
  fc
    .tuple(fc.constantFrom('', '-'), fc.integer({ min: 19, max: 400 }))
    .map(([sign, exponent]) => `${sign}1e${exponent}`),
  fc.constantFrom('1.5', '-0.5', '1.0000000000000000001', '9223372036854775807.5', '1e-7'),
)
const plainPlant = validBody.filter(({ body }) => Buffer.byteLength(body) < 1000)
const json = (payload: string | Buffer, status: Invalid['status'], kind: string) => ({
  kind,
  payload,
  headers: JSON_HEADERS,
  status,
})
/** Not `application/json` (the last one empty: none). */
const OTHER_TYPES =
  'text/plain,application/xml,text/json,application/jsonx,application/json5,application/json-patch+json,' +
  'application/x-www-form-urlencoded,multipart/form-data; boundary=x,*/*,application/*,json,'
const mediaType = fc
  .oneof(
    fc.constantFrom(...OTHER_TYPES.split(',')),
    fc.array(fc.stringMatching(/^[a-z][a-z0-9.+-]{0,12}$/), { minLength: 2, maxLength: 2 }).map((t) => t.join('/')),
  )
  .filter((type) => type.split(';')[0]!.trim().toLowerCase() !== 'application/json')

/** Invalid cases `mutate` makes of a small valid plant's members. */
const mutation = (mutate: (plant: Member[]) => fc.Arbitrary<Invalid>) =>
  plainPlant.chain(({ plant }) => mutate(members(plant)).map((mutated) => ({ ...mutated, id: plant.id })))
const without = (plant: Member[], key: string) => plant.filter(([k]) => k !== key)
const replaced = (plant: Member[], key: string, value: string, kind: string) =>
  json(jsonText([...without(plant, key), [key, value]]), 400, kind)

const invalid: fc.Arbitrary<Invalid> = fc.oneof(
  mutation((p) =>
    fc
      .tuple(fc.constantFrom('name', 'tag'), nonString)
      .map(([key, value]) => replaced(p, key, JSON.stringify(value), `${key} not a string`)),
  ),
  mutation((p) => nonInteger.map((value) => replaced(p, 'id', JSON.stringify(value), 'id not an integer'))),
  mutation((p) => hugeNumber.map((literal) => replaced(p, 'id', literal, 'id outside int64'))),
  mutation((p) => fc.constantFrom('id', 'name').map((key) => json(jsonText(without(p, key)), 400, `${key} missing`))),
  mutation((p) =>
    fc
      .constantFrom('[%]', '{"plant":%}', '[[%]]', '{"id":%,"name":"x"}')
      .map((wrap) => json(wrap.replace('%', jsonText(p)), 400, 'nested junk')),
  ),
  mutation((p) =>
    fc
      .tuple(fc.constantFrom(...p), fc.jsonValue({ maxDepth: 1 }))
      .filter(([[, value], other]) => JSON.stringify(other) !== value)
      .map(([[key], other]) =>
        json(jsonText([...p, [key, JSON.stringify(other)]]), 400, `duplicate ${key}, another value`),
      ),
  ),
  mutation((p) => fc.constant(json(jsonText([...p, ['x', '{"a":1,"a":2}']]), 400, 'nested duplicate'))),
  mutation((p) =>
    mediaType.map((type) => ({
      kind: `content type ${type}`,
      payload: jsonText(p),
      headers: { authorization: JSON_HEADERS.authorization, ...(type === '' ? {} : { 'content-type': type }) },
      status: 415 as const,
    })),
  ),
  mutation((p) =>
    fc
      .integer({ min: BODY_LIMIT + 1, max: 3 * BODY_LIMIT })
      .map((bytes) =>
        json(jsonText([...p, ['padding', JSON.stringify('x'.repeat(bytes))]]), 413, 'over the body limit'),
      ),
  ),
  fc.uint8Array({ maxLength: 512 }).map((bytes) => json(Buffer.from(bytes), 400, 'random bytes')),
  fc.string({ unit: 'binary', maxLength: 200 }).map((junk) => json(junk, 400, 'random text')),
)

t.test('a mutated body gets 400, 413 or 415 with the Error body, never a 5xx, and stores nothing', async (t) => {
  const app = await build(t, { bodyLimit: BODY_LIMIT })
  const ids = new Set<bigint>()
  await holds(
    t,
    fc.asyncProperty(invalid, async ({ kind, payload, headers, status, id }) => {
      const response = await postPlant(app, payload, { headers })
      deepStrictEqual(contractViolations(response), [], `${kind}: the response conforms`)
      equal(response.statusCode, status, `${kind}: status`)
      if (id !== undefined) ids.add(id)
    }),
  )
  const created = await Promise.all(
    [...ids].slice(0, 50).map((id) => postPlant(app, `{"id":${id},"name":"\u00e9 after the invalid ones"}`)),
  )
  const taken = created.map((response) => response.statusCode).filter((status) => status !== 200)
  t.same(taken, [], `${Math.min(ids.size, 50)} ids are still free`)
})

t.test('without a valid token any request gets 401, whatever its body (authentication first)', async (t) => {
  const app = await build(t, { bodyLimit: BODY_LIMIT })
  const credentials = fc.constantFrom(
    undefined,
    'Bearer',
    `Bearer ${OTHER_TOKEN}x`,
    `Basic ${OTHER_TOKEN}`,
    'Bearer not-a-token-0123456789abcdef',
  )
  const request = fc.oneof(
    invalid,
    validBody.map(({ body, contentType }) => ({
      payload: body,
      headers: { ...JSON_HEADERS, 'content-type': contentType },
    })),
  )
  await holds(
    t,
    fc.asyncProperty(request, credentials, async ({ payload, headers }, authorization) => {
      const response = await postPlant(app, payload, { headers: { ...headers, authorization } })
      deepStrictEqual(contractViolations(response), [], 'the response conforms')
      equal(response.statusCode, 401)
    }),
  )
})

t.test('a member repeated with an equal value is the same plant: 200 (RFC 8259 §4: no ambiguity)', async (t) => {
  const app = await build(t, { bodyLimit: BODY_LIMIT })
  const duplicated = plainPlant
    .map(({ plant }) => members(plant))
    .chain((p) => fc.constantFrom(...p).map((member) => ({ plain: jsonText(p), repeated: jsonText([...p, member]) })))
  await holds(
    t,
    fc.asyncProperty(duplicated, async ({ plain, repeated }) => {
      const first = await postPlant(app, plain)
      const again = await postPlant(app, repeated)
      deepStrictEqual(contractViolations(again), [], 'the response conforms')
      equal(again.statusCode, first.statusCode === 409 ? 409 : 200, 'as the plain body')
      equal(again.body, first.body)
    }),
  )
})
