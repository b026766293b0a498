/**
 * The body parser (body.ts): UTF-8 only, the nesting and number-length limits, repeated member names and
 * invalid JSON as 400 (RFC 8259), a content coding or another charset as 415; and the fast path's scan.
 *
 * @module
 */
import t, { type Test } from 'tap'
import {
  ExactJsonError,
  IDENTITY_ONLY,
  MAX_DEPTH,
  MAX_NUMBER_LENGTH,
  parseJsonBody,
  parsedIfSame,
  QUOTED_KEY_LENGTH,
  requireIdentityUtf8,
  shapeOf,
  UTF8_ONLY,
} from '../body.ts'

const TOO_LONG = `A number in the request is longer than ${MAX_NUMBER_LENGTH} characters`

/** The error `parse` throws, checked to be an ExactJsonError. */
function refusal(t: Test, parse: () => unknown, name: string) {
  const error = t.throws(parse, name) as ExactJsonError
  t.ok(error instanceof ExactJsonError, name)
  return error
}

t.test(
  'a longer number literal is a 400 with its exact message, before its value is computed (RFC 8259 §9)',
  async (t) => {
    const long = '0'.repeat(MAX_NUMBER_LENGTH)
    for (const literal of [
      `1${long}`,
      `-${'9'.repeat(MAX_NUMBER_LENGTH)}`,
      `1.${long}1`,
      `1e${long}1`,
      `1${long}e-${MAX_NUMBER_LENGTH}`,
    ]) {
      const body = `{"id":1,"name":"a","extra":[${literal}]}`
      const { statusCode, code, name, message } = refusal(t, () => parseJsonBody(body), literal.slice(0, 12))
      t.strictSame([statusCode, code, name, message], [400, 'EXACT_JSON_INVALID_BODY', 'ExactJsonError', TOO_LONG])
    }
    t.strictSame(
      parseJsonBody(`{"id":${'9'.repeat(MAX_NUMBER_LENGTH)}}`),
      { id: 2 ** 63 + 2048 },
      'a literal of MAX_NUMBER_LENGTH characters is read (outside int64)',
    )
  },
)

t.test('a member name repeated with an equal value is accepted: every parser reads the same object', async (t) => {
  t.strictSame(parseJsonBody('{"id":1,"name":"a","id":1}'), { id: 1, name: 'a' })
  t.strictSame(parseJsonBody('{"a":{"b":[1,"x"]},"a":{"b":[1,"x"]}}'), { a: { b: [1, 'x'] } })
})

t.test('invalid JSON is a 400; other JSON values parse like JSON.parse', async (t) => {
  for (const valid of [
    '{"s":"x\\u00e9","t":true,"f":false,"n":null,"a":[],"o":{},"x":-1.25e-3}',
    '{"s":"x","t":true,"f":false,"n":null,"a":[1,-2],"o":{"p":{}},"x":-0}',
    '[1, 2.5, "3", [4, {"e": 5}]]',
    'null',
    '7',
  ])
    t.strictSame(parseJsonBody(valid), JSON.parse(valid), valid)
  t.strictSame(parseJsonBody(Buffer.from('{"a":"é"}')), { a: 'é' }, 'bytes in UTF-8')
  for (const text of ['', '{', '{"id":1,}', "{'id':1}", '{"id":01}', 'NaN', '{"id":1} {}', '{"id":1e}', '[1.]']) {
    const error = refusal(t, () => parseJsonBody(text), text)
    t.equal(error.statusCode, 400)
    t.match(error.message, /^Body is not valid JSON: /)
  }
  t.equal(
    refusal(t, () => parseJsonBody('{"id":1,}'), 'trailing comma').message,
    "Body is not valid JSON: Quoted object key expected but got '}' at position 8",
    "the parser's own words follow",
  )
})

t.test(
  'a repeated member name with another value is a 400 (RFC 8259 §4), however spelled; colons in strings are text',
  async (t) => {
    for (const text of [
      '{"id":1,"id":2}',
      '{"a":{"b":1,"b":"1"}}',
      '{"\\u0069d":1,"id":2}',
      '{"a\\"b":1,"a\\u0022b":2}',
      '[{"x":{"y":1}},{"x":{"y":1,"y":[2]}}]',
    ]) {
      const error = refusal(t, () => parseJsonBody(text), text)
      t.equal(error.statusCode, 400)
      t.match(error.message, /^Body is not valid JSON: Duplicate key/)
    }
    t.equal(
      refusal(t, () => parseJsonBody('{"id":1,"id":2}'), 'short').message,
      "Body is not valid JSON: Duplicate key 'id' encountered at position 9",
    )
    const text = '{"a:b":"c\\":d:","e\\\\":":","f":{"g":"::"}}'
    t.strictSame(parseJsonBody(text), JSON.parse(text))
  },
)

t.test('a repeated member name is quoted up to QUOTED_KEY_LENGTH characters, then "…"', async (t) => {
  const key = 'k'.repeat(30_000)
  const error = refusal(t, () => parseJsonBody(`{"${key}":1,"${key}":2}`), 'a 30,000-character key')
  t.equal(
    error.message,
    `Body is not valid JSON: Duplicate key '${'k'.repeat(QUOTED_KEY_LENGTH)}…' encountered at position 30007`,
  )
  const exact = 'x'.repeat(QUOTED_KEY_LENGTH)
  t.equal(
    refusal(t, () => parseJsonBody(`{"${exact}":1,"${exact}":2}`), 'at the length').message,
    `Body is not valid JSON: Duplicate key '${exact}' encountered at position ${QUOTED_KEY_LENGTH + 7}`,
    'a key of QUOTED_KEY_LENGTH characters is quoted whole',
  )
})

t.test(`nesting: ${MAX_DEPTH} levels are read, one more is a 400, however many siblings`, async (t) => {
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
  t.strictSame(parseJsonBody(nested(MAX_DEPTH)), JSON.parse(nested(MAX_DEPTH)))
  for (const depth of [MAX_DEPTH + 1, 30_000]) {
    const error = refusal(t, () => parseJsonBody(nested(depth)), String(depth))
    t.strictSame(
      [error.statusCode, error.message],
      [400, `Body nests arrays and objects deeper than ${MAX_DEPTH} levels`],
    )
  }
  const siblings = `[${Array.from({ length: 3 * MAX_DEPTH }, (_, i) => (i % 2 ? '{"a":[1]}' : '[[2]]')).join(',')}]`
  t.strictSame(parseJsonBody(siblings), JSON.parse(siblings), 'siblings at depth 2 and 3, more than the limit of them')
  t.strictSame(
    parseJsonBody(`["${'['.repeat(100)}\\"{"]`),
    [`${'['.repeat(100)}"{`],
    'brackets inside a string are text',
  )
})

t.test('bytes that are not UTF-8 are a 400', async (t) => {
  for (const bytes of [[0xe9], [0xff], [0xed, 0xa0, 0x80]]) {
    const error = refusal(t, () => parseJsonBody(Buffer.from([0x22, ...bytes, 0x22])), String(bytes))
    t.strictSame([error.statusCode, error.message], [400, 'Body is not valid UTF-8 (RFC 8259 §8.1)'])
  }
})

t.test('a content coding other than identity, or a charset other than UTF-8, is a 415', async (t) => {
  t.equal(UTF8_ONLY, 'Unsupported Media Type: send the body as application/json in UTF-8 (RFC 8259 §8.1)')
  t.equal(
    IDENTITY_ONLY,
    'Unsupported Media Type: send the body without a content coding (Content-Encoding: identity, RFC 9110 §8.4.1)',
  )
  for (const type of [
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset="UTF-8"',
    'application/json;charset=UTF8',
  ])
    t.doesNotThrow(() => requireIdentityUtf8(type), type)
  for (const coding of [undefined, 'identity', 'IDENTITY', ' identity '])
    t.doesNotThrow(() => requireIdentityUtf8('application/json', coding), String(coding))
  for (const charset of ['iso-8859-1', 'utf-16', 'xutf-8', 'utf-80', 'utf--8', 'utf8x', '"utf 8"']) {
    const error = refusal(t, () => requireIdentityUtf8(`application/json; charset=${charset}`), charset)
    t.strictSame([error.statusCode, error.code, error.message], [415, 'EXACT_JSON_UNSUPPORTED_MEDIA_TYPE', UTF8_ONLY])
  }
  const unparsable = refusal(t, () => requireIdentityUtf8('application/json; charset'), 'unparsable')
  t.strictSame([unparsable.statusCode, unparsable.message], [415, UTF8_ONLY])
  for (const coding of ['gzip', 'br', 'deflate', 'identity, gzip', 'gzip, identity', 'xidentity', 'identityx', '']) {
    const error = refusal(t, () => requireIdentityUtf8('application/json', coding), coding)
    t.strictSame(
      [error.statusCode, error.message, error.headers],
      [415, IDENTITY_ONLY, { 'accept-encoding': 'identity' }],
    )
  }
})

t.test(
  'the scan: deepest nesting, members, and whether every number is a plain integer of at most 15 digits',
  async (t) => {
    t.strictSame(shapeOf('{"a":[1,{"b":2}],"c":{}}'), { depth: 3, members: 3, plain: true })
    t.strictSame(shapeOf('[[],[],[[]]]'), { depth: 3, members: 0, plain: true })
    t.strictSame(shapeOf('{"a:b\\"c:":"[{:"}'), { depth: 1, members: 1, plain: true }, 'strings are skipped')
    t.strictSame(shapeOf('[true,false,null,-123456789012345]'), { depth: 1, members: 0, plain: true })
    for (const text of ['[1234567890123456]', '[1.5]', '[1e2]', '[1E2]', '[-0.0]', '[12345678901234,1234567890123456]'])
      t.equal(shapeOf(text).plain, false, text)
    t.equal(shapeOf('[123456789012345,123456789012345]').plain, true, 'the digit count restarts at each number')
    t.equal(shapeOf('["1234567890123456.e"]').plain, true, 'digits inside a string are text')
    t.strictSame(
      shapeOf(`${'['.repeat(MAX_DEPTH + 5)}1.5`),
      { depth: MAX_DEPTH + 1, members: 0, plain: true },
      'the scan stops past the limit',
    )
  },
)

t.test('the fast path: JSON.parse when it reads every member, else nothing', async (t) => {
  t.strictSame(parsedIfSame('{"a":1,"b":{"c":[1,{"d":2}]}}', 4), { a: 1, b: { c: [1, { d: 2 }] } })
  t.strictSame(parsedIfSame('[1,[2,{"a":3}],{"b":null}]', 2), [1, [2, { a: 3 }], { b: null }])
  t.equal(parsedIfSame('{"a":1,"b":{"c":[1,{"d":2}]}}', 3), undefined, 'one member fewer: a repeated name')
  t.equal(parsedIfSame('{"a":1,"a":1}', 2), undefined, 'a repeated name, equal value')
  t.equal(parsedIfSame('{"a":1,}', 1), undefined, 'not JSON: for lossless-json to say why')
  t.equal(parsedIfSame('"x"', 0), 'x')
  t.equal(parsedIfSame('5', 0), 5)
})

t.test('the fast path reads what the exact path reads', async (t) => {
  t.strictSame(parseJsonBody('{"id":123456789012345,"n":-5}'), { id: 123456789012345, n: -5 })
  t.strictSame(
    structuredClone(parseJsonBody('{"id":9007199254740993}')),
    { id: 9007199254740992 },
    'past 2^53: validated as its double',
  )
  t.ok(Number.isNaN((parseJsonBody('{"x":1.00000000000000000001}') as { x: number }).x), 'a rounded fraction is NaN')
  t.ok(Number.isNaN((parseJsonBody('{"x":1e-400}') as { x: number }).x), 'so is an underflow to 0')
  t.strictSame(parseJsonBody('{"x":0.0000000000000000000001e22}'), { x: 1 }, 'a zero-padded fraction with its exponent')
  const proto = parseJsonBody('{"__proto__":{"polluted":1}}') as object
  t.strictSame(Object.keys(proto), ['__proto__'], '__proto__ is an own member')
  t.equal(Object.getPrototypeOf(proto), Object.prototype)
  const exact = parseJsonBody('{"__proto__":{"x":1.5}}') as object
  t.strictSame(
    [Object.keys(exact), Object.getPrototypeOf(exact)],
    [['__proto__'], Object.prototype],
    'read exactly too',
  )
})
