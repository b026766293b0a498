/**
 * A client of the example gateway for tests: raw HTTP/1.1 requests through it
 * (over TLS, from a chosen loopback address), the checks every response of it must
 * pass (the contract's `Error` body, the gateway's request id), and who answered a
 * request, read from the gateway's access log.
 *
 * @module
 */
import type { Test } from 'tap'
import { assertErrorBody } from './contract.js'
import { exchange, type RawResponse, wholeRequest } from './raw-http.js'
import { type Gateway, GATEWAY_PREFIX } from './nginx.js'

/** The public path of `POST /plants` through the gateway. */
export const PLANTS = `${GATEWAY_PREFIX}/plants`

/** Headers of an authenticated JSON request with `token`. */
export function authorized(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }
}

/** A whole `POST` request of `body` with `headers` to `path` (by default {@link PLANTS}), one per connection. */
export function post(body: string, headers: Record<string, string>, path = PLANTS): string {
  return wholeRequest('POST', path, headers, body)
}

/** A whole `GET path` request, one per connection. */
export function get(path: string): string {
  return wholeRequest('GET', path)
}

/**
 * Sends raw bytes to the gateway (string parts as separate writes) and reads its response.
 * @param localAddress - the loopback address to connect from (a client address of the test's choice).
 */
export async function send(gateway: Gateway, raw: string | string[], localAddress?: string): Promise<RawResponse> {
  return exchange({ url: gateway.origin, ca: gateway.ca, localAddress }, raw)
}

/** A JSON body of exactly `size` bytes: a NewPlant whose name fills it. */
export function bodyOf(size: number, id: number): string {
  const head = `{"id":${id},"name":"`
  return `${head}${'n'.repeat(size - head.length - 2)}"}`
}

/** The response has the `Error` body with `error` equal to `status`, as JSON, and the gateway's request id. */
export function errorBody(t: Test, response: RawResponse, status: number): void {
  assertErrorBody(t, response, status)
  t.match(response.headers['x-request-id'], /^[0-9a-f]{32}$/, "the gateway's request id")
}

/**
 * Who answered `response`, from the gateway's access log: `upstream` is the replica
 * (`host:port`, several separated by `, ` when one was tried before another) or empty
 * when the gateway answered itself; `upstreamStatus` is that replica's status.
 */
export async function answeredBy(gateway: Gateway, response: RawResponse): Promise<{ upstream: string; upstreamStatus: string }> {
  const entry = await gateway.accessEntry(response.headers['x-request-id']!)
  return { upstream: entry.upstream as string, upstreamStatus: entry.upstreamStatus as string }
}
