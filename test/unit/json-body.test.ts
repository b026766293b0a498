/**
 * Unit tests of the `application/json` body parser (service/json-body.ts): exact
 * 64-bit integers, out-of-range and non-integral literals that the `int64` format
 * rejects, duplicate member names and invalid JSON as 400 (RFC 8259).
 *
 * @module
 */
import t from 'tap'
import { HttpError } from '../../service/errors.js'
import { exactInteger, int64Format, MAX_NUMBER_LENGTH, parseJsonBody } from '../../service/json-body.js'

const OUT_OF_INT64 = 2 ** 63 + 2048

/** Parses `{"id": <literal>}` and returns the object. */
function parseId(literal: string): { id: number } {
  return parseJsonBody(`{"id":${literal}}`) as { id: number }
}

t.test('safe integers are plain numbers with no exact value recorded', async (t) => {
  for (const [literal, value] of [
    ['0', 0],
    ['-1', -1],
    ['9007199254740991', 9007199254740991],
    ['-9007199254740991', -9007199254740991],
    ['1.0', 1],
    ['1e2', 100],
    ['12.5e1', 125],
    ['0.0', 0],
    ['-0.0e10', 0],
  ] as const) {
    const body = parseId(literal)
    t.equal(body.id, value, literal)
    t.equal(exactInteger(body, 'id'), undefined)
  }
})

t.test('integers beyond 2^53 keep their exact value, read through exactInteger', async (t) => {
  for (const [literal, exact] of [
    ['9007199254740993', 9007199254740993n],
    ['9007199254740992', 9007199254740992n],
    ['-9007199254740993', -9007199254740993n],
    ['9223372036854775807', 9223372036854775807n],
    ['-9223372036854775808', -9223372036854775808n],
    ['1152921504606846977', 1152921504606846977n],
    ['9.007199254740993e15', 9007199254740993n],
    ['90071992547409930e-1', 9007199254740993n],
  ] as const) {
    const body = parseId(literal)
    t.equal(exactInteger(body, 'id'), exact, literal)
    t.equal(body.id, Number(exact), 'the body holds the nearest double, for validation')
    t.ok(int64Format.validate(body.id), 'the int64 format accepts it')
  }
})

t.test('a non-integral literal whose double is an integer becomes NaN', async (t) => {
  for (const literal of ['9007199254740993.5', '123.0000000000000001', '1e-400', '1.00000000000000000001']) {
    t.ok(Number.isNaN(parseId(literal).id), literal)
  }
})

t.test('a non-integral literal whose double is not an integer stays a number', async (t) => {
  t.equal(parseId('1.5').id, 1.5)
  t.notOk(int64Format.validate(parseId('1.5').id))
})

t.test('integers outside int64 are moved beyond ±(2^63 + 2048), which the int64 format rejects', async (t) => {
  for (const [literal, value] of [
    ['9223372036854775808', OUT_OF_INT64],
    ['18446744073709551616', OUT_OF_INT64],
    ['1e30', OUT_OF_INT64],
    ['1.0e300', OUT_OF_INT64],
    ['-9223372036854775809', -OUT_OF_INT64],
    ['-1e30', -OUT_OF_INT64],
  ] as const) {
    const body = parseId(literal)
    t.equal(body.id, value, literal)
    t.equal(exactInteger(body, 'id'), undefined)
    t.notOk(int64Format.validate(body.id))
  }
})

t.test('a huge exponent is parsed without a huge bigint, and rejected by the int64 format', async (t) => {
  for (const literal of ['1e1000000', '-1e1000000', `${'9'.repeat(MAX_NUMBER_LENGTH)}`, `0.${'0'.repeat(80)}1e1000000`]) {
    const body = parseId(literal)
    t.notOk(int64Format.validate(body.id), literal.slice(0, 20))
    t.equal(exactInteger(body, 'id'), undefined)
  }
})

t.test('a number literal of up to MAX_NUMBER_LENGTH characters is read exactly, however it is padded', async (t) => {
  const padded = (literal: string) => t.equal(literal.length, MAX_NUMBER_LENGTH) && parseId(literal)
  t.same(padded(`1${'0'.repeat(MAX_NUMBER_LENGTH - 5)}e-95`), { id: 1 }, 'trailing zeros cancelled by the exponent')
  const fraction = `-0.${'0'.repeat(MAX_NUMBER_LENGTH - 8)}12e-3`
  t.same(padded(fraction), { id: Number(fraction) }, 'a long fraction')
  t.ok(Number.isNaN((padded(`1.${'0'.repeat(MAX_NUMBER_LENGTH - 3)}1`) as { id: number }).id), 'a fraction that rounds to an integer is still not one')
})

t.test('a longer number literal is an HttpError 400 before its value is computed (RFC 8259 §9)', async (t) => {
  const long = '0'.repeat(MAX_NUMBER_LENGTH)
  for (const literal of [`1${long}`, `-${'9'.repeat(MAX_NUMBER_LENGTH)}`, `1.${long}1`, `1e${long}1`, `1${long}e-${MAX_NUMBER_LENGTH}`]) {
    const error = t.throws(() => parseJsonBody(`{"id":1,"name":"a","extra":[${literal}]}`), literal.slice(0, 12)) as HttpError
    t.ok(error instanceof HttpError)
    t.match(error, { statusCode: 400, message: `A number in the request is longer than ${MAX_NUMBER_LENGTH} characters` })
  }
})

t.test('bigints nested in arrays and objects are recorded beside their holder', async (t) => {
  const body = parseJsonBody('{"a":[1,9007199254740993,{"b":-9007199254740993}],"c":{"d":9223372036854775808},"e":2}') as {
    a: [number, number, { b: number }]
    c: { d: number }
    e: number
  }
  t.equal(exactInteger(body.a, '1'), 9007199254740993n)
  t.equal(exactInteger(body.a[2], 'b'), -9007199254740993n)
  t.equal(exactInteger(body.a, '0'), undefined)
  t.equal(body.c.d, OUT_OF_INT64)
  t.equal(body.e, 2)
  t.equal(parseJsonBody('9007199254740993'), Number(9007199254740993n), 'a bare top-level integer is its nearest double')
})

t.test('int64Format.validate accepts exactly the doubles of signed 64-bit integers', async (t) => {
  for (const value of [0, -1, 2 ** 53 + 2, 2 ** 63, -(2 ** 63)]) t.ok(int64Format.validate(value), String(value))
  for (const value of [OUT_OF_INT64, -OUT_OF_INT64, 1.5, Number.NaN, Infinity, -Infinity]) {
    t.notOk(int64Format.validate(value), String(value))
  }
  t.equal(int64Format.type, 'number')
})

t.test('other JSON values parse like JSON.parse', async (t) => {
  const text = '{"s":"x\\u00e9","t":true,"f":false,"n":null,"a":[],"o":{},"x":-1.25e-3}'
  t.strictSame(parseJsonBody(text), JSON.parse(text))
})

t.test('a repeated member name with different values is an HttpError 400 (RFC 8259 §4)', async (t) => {
  for (const text of ['{"id":1,"id":2}', '{"a":{"b":1,"b":"1"}}']) {
    const error = t.throws(() => parseJsonBody(text)) as HttpError
    t.ok(error instanceof HttpError)
    t.match(error, { statusCode: 400, message: /^Body is not valid JSON: Duplicate key/ })
  }
})

t.test('a member name repeated with an equal value is accepted: every parser reads the same object', async (t) => {
  t.same(parseJsonBody('{"id":1,"name":"a","id":1}'), { id: 1, name: 'a' })
  t.same(parseJsonBody('{"a":{"b":[1,"x"]},"a":{"b":[1,"x"]}}'), { a: { b: [1, 'x'] } })
})

t.test('invalid JSON is an HttpError 400', async (t) => {
  for (const text of ['', '{', '{"id":1,}', "{'id':1}", '{"id":01}', 'NaN', '{"id":1} {}', '{"id":1e}']) {
    const error = t.throws(() => parseJsonBody(text), text) as HttpError
    t.ok(error instanceof HttpError, text)
    t.match(error, { statusCode: 400, message: /^Body is not valid JSON: / })
  }
})

t.test('a repeated member name is found however it is spelled, and colons inside strings are not members', async (t) => {
  for (const text of ['{"\\u0069d":1,"id":2}', '{"a\\"b":1,"a\\u0022b":2}', '[{"x":{"y":1}},{"x":{"y":1,"y":[2]}}]']) {
    t.match(t.throws(() => parseJsonBody(text), text), { statusCode: 400, message: /^Body is not valid JSON: Duplicate key/ })
  }
  const text = '{"a:b":"c\\":d:","e\\\\":":","f":{"g":"::"}}'
  t.strictSame(parseJsonBody(text), JSON.parse(text))
})
