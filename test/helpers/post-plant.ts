/** `POST /plants` as a client sends it: by `inject`, or over HTTP(S) to a service or gateway. */
import { type Agent, type IncomingHttpHeaders, type OutgoingHttpHeaders, request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { JSON_HEADERS } from './app.ts'
import { contractViolations } from './contract.ts'

/** Request headers; one `undefined` is not sent. */
export type RequestHeaders = Record<string, string | undefined>

/** A body: an object as its JSON text (bigints exact), a string or Buffer byte for byte. */
export type PlantBody = object | string | Buffer

/** A response either way: header names lower case, numbers as text. */
export interface PlantResponse {
  readonly statusCode: number
  readonly headers: IncomingHttpHeaders
  readonly body: string
  json(): Record<string, unknown>
}

export interface PostOptions {
  /** {@link JSON_HEADERS} unless given. */
  readonly headers?: RequestHeaders
  /** When given, asserts that the response conforms to the contract. */
  readonly t?: Pick<Test, 'same'>
  /** The client's address: the remote one with `inject`, the local one over HTTP (127.0.0.0/8). */
  readonly from?: string
  /** Over HTTP(S), else Node's global agent. */
  readonly agent?: Agent
  /** Over HTTP(S): fail when the connection is idle this long. */
  readonly timeoutMs?: number
}

/** POSTs `body` (if any) to `/plants`. @throws over HTTP(S) when no whole response comes. */
export async function postPlant(
  target: FastifyInstance | string,
  body?: PlantBody,
  options: PostOptions = {},
): Promise<PlantResponse> {
  const given = Object.entries(options.headers ?? JSON_HEADERS)
  const headers = Object.fromEntries(given.filter((entry): entry is [string, string] => entry[1] !== undefined))
  const payload = body === undefined || typeof body === 'string' || Buffer.isBuffer(body) ? body : jsonText(body)
  const response =
    typeof target === 'string'
      ? await overHttp(target, payload, headers, options)
      : await target
          .inject({ method: 'POST', url: '/plants', headers, payload, remoteAddress: options.from })
          .then(({ statusCode, headers, body }) => answer(statusCode, headers, body))
  options.t?.same(contractViolations(response), [], `${response.statusCode} conforms to the contract`)
  return response
}

/** The JSON text of `value`, bigints written as exact integers. */
export function jsonText(value: object) {
  return JSON.stringify(value, (_key, member: unknown) =>
    typeof member === 'bigint' ? rawJSON(member.toString()) : member,
  )
}

/** `JSON.rawJSON` (not yet in TypeScript's library). */
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON

async function overHttp(
  base: string,
  payload: string | Buffer | undefined,
  headers: Record<string, string>,
  options: PostOptions,
): Promise<PlantResponse> {
  const url = new URL(`${base.replace(/\/$/, '')}/plants`)
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  const sized =
    payload === undefined || Object.keys(headers).some((name) => name.toLowerCase() === 'content-length')
      ? headers
      : { ...headers, 'content-length': String(Buffer.byteLength(payload)) }
  return new Promise((resolve, reject) => {
    const sent = send(
      url,
      { method: 'POST', headers: sized, agent: options.agent, localAddress: options.from, timeout: options.timeoutMs },
      (incoming) => {
        let text = ''
        incoming.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
        incoming.on('error', reject)
        incoming.on('end', () => resolve(answer(incoming.statusCode!, incoming.headers, text)))
        incoming.on('close', () => incoming.complete || reject(new Error(`POST ${url}: the response was cut off`)))
      },
    )
    sent.on('timeout', () => sent.destroy(new Error(`POST ${url}: no answer within ${options.timeoutMs} ms`)))
    sent.on('error', reject)
    sent.end(payload)
  })
}

function answer(statusCode: number, headers: IncomingHttpHeaders | OutgoingHttpHeaders, body: string): PlantResponse {
  const text = Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, typeof value === 'number' ? String(value) : value]),
  )
  return { statusCode, headers: text, body, json: () => JSON.parse(body) as Record<string, unknown> }
}
