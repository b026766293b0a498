/**
 * Exact JSON for Fastify: integers past 2^53 reach handlers as `bigint` and go back out digit for digit.
 * README.md says what it guarantees and how to register it. @module
 */
import type { Readable } from 'node:stream'
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { parseJsonBody, requireIdentityUtf8 } from './body.ts'
import { exactInt64 } from './hand-over.ts'
import { int64Format } from './integers.ts'

export { ExactJsonError, IDENTITY_ONLY, MAX_DEPTH, MAX_NUMBER_LENGTH, parseJsonBody, UTF8_ONLY } from './body.ts'
export { exactInt64 } from './hand-over.ts'
export { int64Format, numberOf } from './integers.ts'

/** `JSON.rawJSON` (Node 21+; TC39 "JSON.parse source text access"), not yet in TypeScript's lib. */
declare global {
  interface JSON {
    rawJSON(text: string): unknown
  }
}

/** Adds the exact `int64` format to an Ajv instance (Fastify's `ajv.onCreate` or `ajv.plugins`). */
export function addInt64Format<Ajv extends { addFormat(name: string, format: typeof int64Format): unknown }>(
  ajv: Ajv,
): Ajv {
  ajv.addFormat('int64', int64Format)
  return ajv
}

/**
 * Fastify's `ajv` server option the plugin needs: no type coercion (it reads integer parameters itself) and
 * the exact `int64` format, added after ajv-formats' own.
 */
export const ajvOptions = { customOptions: { coerceTypes: false }, onCreate: addInt64Format } as const

const exactReplacer = (_key: string, value: unknown): unknown =>
  typeof value === 'bigint' ? JSON.rawJSON(value.toString()) : value

/** JSON text of `value` with every `bigint` digit for digit, for a reply without a schema (`JSON.stringify` throws). */
export function stringify(value: unknown): string {
  return JSON.stringify(value, exactReplacer)
}

/** The plugin's options (README.md, "Registering it"). */
export interface ExactJsonOptions {
  /** Remove Fastify's other body parsers, so any other media type, or a body without one, is 415; default false. */
  onlyJson?: boolean
}

const { FST_ERR_CTP_BODY_TOO_LARGE, FST_ERR_CTP_INVALID_CONTENT_LENGTH } = errorCodes

/**
 * The body's bytes, read as Fastify's `parseAs: 'buffer'` reads them (the route's `bodyLimit` is 413, a
 * `Content-Length` the body does not match 400, with Fastify's errors; a `preParsing` stream may give text and
 * its `receivedEncodedLength`), but a body that came in one chunk is that chunk, uncopied (README.md says why).
 */
function readBody(
  request: FastifyRequest,
  payload: Readable & { receivedEncodedLength?: number },
): Promise<Uint8Array | string> {
  const limit = request.routeOptions.bodyLimit
  const declared = Number(request.headers['content-length'])
  if (declared > limit) return Promise.reject(new FST_ERR_CTP_BODY_TOO_LARGE())
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let length = 0
    const onData = (data: Buffer | string): void => {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data
      length += chunk.length
      if (length <= limit && (payload.receivedEncodedLength ?? 0) <= limit) return void chunks.push(chunk)
      stop()
      reject(new FST_ERR_CTP_BODY_TOO_LARGE())
    }
    const onError = (error: Error & { statusCode?: number }): void => {
      stop()
      if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400
      reject(error)
    }
    const onEnd = (): void => {
      stop()
      const received = payload.receivedEncodedLength || length
      if (!Number.isNaN(declared) && received !== declared) reject(new FST_ERR_CTP_INVALID_CONTENT_LENGTH())
      else resolve(chunks.length > 1 ? Buffer.concat(chunks, length) : (chunks[0] ?? ''))
    }
    const stop = (): void => void payload.off('data', onData).off('end', onEnd).off('error', onError)
    payload.on('data', onData).on('end', onEnd).on('error', onError).resume()
  })
}

async function parseBody(request: FastifyRequest, payload: Readable): Promise<unknown> {
  const body = await readBody(request, payload)
  requireIdentityUtf8(request.headers['content-type'], request.headers['content-encoding'])
  return parseJsonBody(body)
}

async function exactJson(app: FastifyInstance, options: ExactJsonOptions): Promise<void> {
  if (options.onlyJson === true) app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', parseBody)
  app.addHook('onRoute', exactInt64)
}

/** The plugin: register it before the routes it serves, with {@link ajvOptions} in Fastify's options. */
export default fp(exactJson, { name: 'exact-json', fastify: '5.x' })
