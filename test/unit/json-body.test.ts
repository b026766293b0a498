/**
 * The `application/json` body parser (service/json-body.ts): the length limit on number
 * literals, duplicate member names and invalid JSON as 400 (RFC 8259). Numbers are read
 * by the exact-integer rule: exact-integers.test.ts.
 *
 * @module
 */
import t from 'tap'
import { HttpError } from '../../service/errors.ts'
import { MAX_NUMBER_LENGTH, parseJsonBody } from '../../service/json-body.ts'

t.test('a longer number literal is an HttpError 400 before its value is computed (RFC 8259 §9)', async (t) => {
  const long = '0'.repeat(MAX_NUMBER_LENGTH)
  for (const literal of [
    `1${long}`,
    `-${'9'.repeat(MAX_NUMBER_LENGTH)}`,
    `1.${long}1`,
    `1e${long}1`,
    `1${long}e-${MAX_NUMBER_LENGTH}`,
  ]) {
    const error = t.throws(
      () => parseJsonBody(`{"id":1,"name":"a","extra":[${literal}]}`),
      literal.slice(0, 12),
    ) as HttpError
    t.ok(error instanceof HttpError)
    t.match(error, {
      statusCode: 400,
      message: `A number in the request is longer than ${MAX_NUMBER_LENGTH} characters`,
    })
  }
  t.type(
    parseJsonBody(`{"id":${'9'.repeat(MAX_NUMBER_LENGTH)}}`),
    'object',
    'a literal of MAX_NUMBER_LENGTH characters is read',
  )
})

t.test('a member name repeated with an equal value is accepted: every parser reads the same object', async (t) => {
  t.same(parseJsonBody('{"id":1,"name":"a","id":1}'), { id: 1, name: 'a' })
  t.same(parseJsonBody('{"a":{"b":[1,"x"]},"a":{"b":[1,"x"]}}'), { a: { b: [1, 'x'] } })
})

t.test('invalid JSON is an HttpError 400; other JSON values parse like JSON.parse', async (t) => {
  const valid = '{"s":"x\\u00e9","t":true,"f":false,"n":null,"a":[],"o":{},"x":-1.25e-3}'
  t.strictSame(parseJsonBody(valid), JSON.parse(valid))
  for (const text of ['', '{', '{"id":1,}', "{'id':1}", '{"id":01}', 'NaN', '{"id":1} {}', '{"id":1e}']) {
    const error = t.throws(() => parseJsonBody(text), text) as HttpError
    t.ok(error instanceof HttpError, text)
    t.match(error, { statusCode: 400, message: /^Body is not valid JSON: / })
  }
})

t.test(
  'a repeated member name with different values is an HttpError 400 (RFC 8259 §4) however it is spelled; colons inside strings are not members',
  async (t) => {
    for (const text of [
      '{"id":1,"id":2}',
      '{"a":{"b":1,"b":"1"}}',
      '{"\\u0069d":1,"id":2}',
      '{"a\\"b":1,"a\\u0022b":2}',
      '[{"x":{"y":1}},{"x":{"y":1,"y":[2]}}]',
    ]) {
      t.match(
        t.throws(() => parseJsonBody(text), text),
        { statusCode: 400, message: /^Body is not valid JSON: Duplicate key/ },
      )
    }
    const text = '{"a:b":"c\\":d:","e\\\\":":","f":{"g":"::"}}'
    t.strictSame(parseJsonBody(text), JSON.parse(text))
  },
)
