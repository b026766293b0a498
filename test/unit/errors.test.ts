/**
 * Unit tests of `toErrorResponse` (service/errors.ts): every failure becomes the
 * contract's `Error` body with `error` equal to the status; internals never leave.
 *
 * @module
 */
import { errorCodes } from 'fastify'
import t from 'tap'
import { HttpError, UNSUPPORTED_MEDIA_TYPE, UnauthorizedError, toErrorResponse } from '../../service/errors.js'

t.test('an HttpError keeps its status, message and headers', async (t) => {
  t.strictSame(toErrorResponse(new HttpError(409, 'A different plant with id 1 already exists')), {
    statusCode: 409,
    headers: {},
    body: { error: 409, message: 'A different plant with id 1 already exists' },
    internal: false,
  })
  t.strictSame(toErrorResponse(new HttpError(503, 'The store is unavailable; retry later', { 'retry-after': '1' })), {
    statusCode: 503,
    headers: { 'retry-after': '1' },
    body: { error: 503, message: 'The store is unavailable; retry later' },
    internal: false,
  })
})

t.test('an UnauthorizedError carries the RFC 6750 §3 challenge, with error="invalid_token" only for a rejected token', async (t) => {
  t.match(toErrorResponse(new UnauthorizedError('plant-store', false)), {
    statusCode: 401,
    headers: { 'www-authenticate': 'Bearer realm="plant-store"' },
    body: { error: 401, message: 'A bearer token is required' },
  })
  t.match(toErrorResponse(new UnauthorizedError('plant-store', true)), {
    statusCode: 401,
    headers: { 'www-authenticate': 'Bearer realm="plant-store", error="invalid_token"' },
    body: { error: 401, message: 'The bearer token is not valid' },
  })
})

t.test("Fastify's client errors keep their status and message", async (t) => {
  const tooLarge = new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE()
  t.strictSame(toErrorResponse(tooLarge), { statusCode: 413, headers: {}, body: { error: 413, message: tooLarge.message }, internal: false })
  const empty = new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY()
  t.strictSame(toErrorResponse(empty), { statusCode: 400, headers: {}, body: { error: 400, message: empty.message }, internal: false })
  const validation = Object.assign(new Error('body/name must be string'), { statusCode: 400, validation: [{ instancePath: '/name' }] })
  t.strictSame(toErrorResponse(validation).body, { error: 400, message: 'body/name must be string' })
})

t.test('a 415 always has the message naming application/json', async (t) => {
  t.strictSame(toErrorResponse(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE('text/plain')), {
    statusCode: 415,
    headers: {},
    body: { error: 415, message: UNSUPPORTED_MEDIA_TYPE },
    internal: false,
  })
})

t.test('anything else is 500 Internal Server Error, marked internal, with nothing of the cause', async (t) => {
  const internal = { statusCode: 500, headers: {}, body: { error: 500, message: 'Internal Server Error' }, internal: true }
  for (const error of [
    new Error('SQLITE_ERROR: no such table: plant'),
    Object.assign(new Error('server error with a status'), { statusCode: 502 }),
    Object.assign(new Error('a redirect is not an error'), { statusCode: 302 }),
    Object.assign(new Error('Unauthorized without errors'), { name: 'Unauthorized' }),
    'a thrown string',
    42,
    {},
  ]) {
    t.strictSame(toErrorResponse(error), internal, String(error))
  }
})

t.test('null or undefined thrown is 500 too', async (t) => {
  for (const error of [null, undefined]) {
    t.strictSame(toErrorResponse(error).statusCode, 500)
  }
})
