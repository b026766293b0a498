/**
 * `POST /plants` as a client sends it, for every test (and any other operation of the
 * contract, {@link callOperation}): into an app (`inject`), or over HTTP or HTTPS to a
 * running service, container or gateway, with one response shape for both. Requests no client would send (malformed HTTP) are written to a
 * socket by `raw-http.ts` instead; a test that needs more of the exchange than its
 * answer (a fetch `Response` for the typed client's reader, a body held half-sent)
 * makes that request itself.
 *
 * @module
 */
import { type Agent, type IncomingHttpHeaders, type OutgoingHttpHeaders, request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { JSON_HEADERS } from './app.js'
import { contractViolations, type RequestLine } from './contract.js'

/** Request headers; a header whose value is `undefined` is not sent. */
export type RequestHeaders = Record<string, string | undefined>

/**
 * A request body: an object is sent as its JSON text, bigints as exact integers
 * (`{ id: 2n ** 63n - 1n }` is `{"id":9223372036854775807}`); a string or Buffer is
 * sent as it is, byte for byte.
 */
export type PlantBody = object | string | Buffer

/** A response, the same whichever way the request went. */
export interface PlantResponse {
  readonly statusCode: number
  /** Header names in lower case, values as sent (numbers as their text). */
  readonly headers: IncomingHttpHeaders
  /** The body as UTF-8 text. */
  readonly body: string
  /** The body parsed as JSON. @throws when it is not JSON. */
  json(): Record<string, unknown>
}

/** How to send the request; each option applies where it says. */
export interface PostOptions {
  /** {@link JSON_HEADERS} (the test token) unless given; `undefined` values are left out (e.g. `{ ...JSON_HEADERS, authorization: undefined }`). */
  readonly headers?: RequestHeaders
  /** When given, asserts on it that the response conforms to the contract (`contractViolations`); the test then asserts what it expects. */
  readonly t?: Pick<Test, 'same'>
  /** The client's address: the socket's remote address with `inject`, the local address to connect from over HTTP (any of 127.0.0.0/8). */
  readonly from?: string
  /** Over HTTPS: the PEM certificate to trust (e.g. the test gateway's self-signed one). */
  readonly ca?: string
  /** Over HTTP(S): the agent whose connections to use (e.g. one kept alive); Node's global agent unless given. */
  readonly agent?: Agent
  /** Over HTTP(S): the request fails when its connection is idle this long (no default). */
  readonly timeoutMs?: number
}

/**
 * POSTs `body` to `/plants` of `target`: an app, by `inject`; or a base URL (e.g.
 * `http://127.0.0.1:41234`, or a gateway's `https://…/plant-store`) over HTTP(S),
 * with a `Content-Length`.
 *
 * @param body - see {@link PlantBody}; `undefined` sends none.
 * @returns the response, once its body has come.
 * @throws over HTTP(S), when no whole response comes (connection refused or reset,
 *   cut off, {@link PostOptions.timeoutMs} passed).
 */
export async function postPlant(target: FastifyInstance | string, body?: PlantBody, options: PostOptions = {}): Promise<PlantResponse> {
  return callOperation(target, { method: 'POST', url: '/plants' }, body, options)
}

/**
 * Sends `request` (e.g. `{ method: 'GET', url: '/plants/1' }`) to `target` as
 * {@link postPlant} sends `POST /plants`; with `options.t`, checks the response
 * against the operation of the contract the request is for.
 */
export async function callOperation(target: FastifyInstance | string, request: RequestLine, body?: PlantBody, options: PostOptions = {}): Promise<PlantResponse> {
  const headers = Object.fromEntries(Object.entries(options.headers ?? JSON_HEADERS).filter((entry): entry is [string, string] => entry[1] !== undefined))
  const payload = body === undefined || typeof body === 'string' || Buffer.isBuffer(body) ? body : jsonText(body)
  const response = typeof target === 'string' ? await overHttp(target, request, payload, headers, options) : await injected(target, request, payload, headers, options)
  options.t?.same(contractViolations(response, request), [], `${response.statusCode} conforms to the contract`)
  return response
}

/** The JSON text of `value`, bigints written as exact integers. */
export function jsonText(value: object): string {
  return JSON.stringify(value, (_key, member: unknown) => (typeof member === 'bigint' ? rawJSON(member.toString()) : member))
}

/** `JSON.rawJSON` (Node 21 and later; not yet in TypeScript's library). */
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON

/** Through `inject`. */
async function injected(app: FastifyInstance, request: RequestLine, payload: string | Buffer | undefined, headers: Record<string, string>, options: PostOptions): Promise<PlantResponse> {
  const response = await app.inject({
    method: request.method as 'POST',
    url: request.url,
    headers,
    ...(payload === undefined ? {} : { payload }),
    ...(options.from === undefined ? {} : { remoteAddress: options.from }),
  })
  return answer(response.statusCode, response.headers, response.body)
}

/** Over a real connection to `base`. */
async function overHttp(base: string, request: RequestLine, payload: string | Buffer | undefined, headers: Record<string, string>, options: PostOptions): Promise<PlantResponse> {
  const url = new URL(`${base.replace(/\/$/, '')}${request.url}`)
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  const sized = payload === undefined || Object.keys(headers).some((name) => name.toLowerCase() === 'content-length') ? headers : { ...headers, 'content-length': String(Buffer.byteLength(payload)) }
  return new Promise((resolve, reject) => {
    const sent = send(url, { method: request.method, headers: sized, agent: options.agent, ca: options.ca, localAddress: options.from, timeout: options.timeoutMs }, (incoming) => {
      const chunks: Buffer[] = []
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
      incoming.on('error', reject)
      incoming.on('end', () => resolve(answer(incoming.statusCode!, incoming.headers, Buffer.concat(chunks).toString('utf8'))))
      // A response cut off before its end is no answer.
      incoming.on('close', () => {
        if (!incoming.complete) reject(new Error(`${request.method} ${url}: the response was cut off`))
      })
    })
    sent.on('timeout', () => sent.destroy(new Error(`${request.method} ${url}: no answer before the socket timed out (${options.timeoutMs ?? 'the agent default'} ms)`)))
    sent.on('error', reject)
    sent.end(payload)
  })
}

/** A {@link PlantResponse} of a status, headers and body text. */
function answer(statusCode: number, headers: IncomingHttpHeaders | OutgoingHttpHeaders, body: string): PlantResponse {
  const text = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, typeof value === 'number' ? String(value) : value]))
  return { statusCode, headers: text, body, json: () => JSON.parse(body) as Record<string, unknown> }
}
