/** `toErrorResponse` on what no request can make the service throw: 500 with nothing of the cause; `asError`. */
import t from 'tap'
import { asError, errorCode, httpErrorOf } from '../../service/errors.ts'
import { toErrorResponse } from '../../service/plugins/strict-http/index.ts'

t.test('anything but an HTTP error is 500, marked internal, with nothing of the cause', async (t) => {
  const internal = { statusCode: 500, headers: {}, message: 'Internal Server Error', internal: true }
  for (const error of [
    new Error('SQLITE_ERROR: no such table: plant'),
    Object.assign(new Error('server error with a status'), { statusCode: 502 }),
    Object.assign(new Error('a redirect is not an error'), { statusCode: 302 }),
    Object.assign(new Error('Unauthorized without errors'), { name: 'Unauthorized' }),
    'a thrown string',
    42,
    {},
    null,
    undefined,
  ])
    t.strictSame(toErrorResponse(httpErrorOf(error)), internal, String(error))
})

t.test('a thrown value reads as an Error and a code whatever it is', async (t) => {
  const failure = Object.assign(new Error('no such file'), { code: 'ENOENT' })
  t.equal(asError(failure), failure, 'an Error is itself')
  t.equal(errorCode(failure), 'ENOENT')
  for (const [thrown, message] of [
    ['a thrown string', 'a thrown string'],
    [42, '42'],
    [null, 'null'],
    [undefined, 'undefined'],
  ] as const) {
    t.match(asError(thrown), { constructor: Error, message }, `${message}: an Error of its text`)
    t.equal(errorCode(thrown), undefined, `${message}: no code`)
  }
  t.equal(errorCode({ code: 7 }), 7, 'any code, as it is')
  t.equal(errorCode({}), undefined)
})
