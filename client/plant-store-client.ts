/**
 * A typed client for `createPlant` (`POST /plants`) that keeps `id` exact over the
 * whole signed 64-bit range: `id` is a `bigint`, written as its exact digits, where
 * `JSON.stringify` refuses a bigint and a `number` is rounded beyond 2^53.
 *
 * Types come from openapi.yaml through service/generated/openapi.ts: the request is
 * `NewPlant` with `id: bigint`, and every response status the contract declares for
 * `createPlant` is one member of {@link CreatePlantResult}, its `body` typed by the
 * contract (`Plant` for 200, `Error` for the others). Answers are results, not
 * exceptions; only a failed exchange throws ({@link PlantStoreNetworkError}) or an
 * answer outside the contract ({@link PlantStoreResponseError}).
 *
 * JSON is written and read with lossless-json, the parser of the service, by the
 * service's rule: an integer beyond 2^53 is read as an exact `bigint`, any other
 * number as a `number`.
 *
 * @module
 */
import { isInteger, isSafeNumber, parse, stringify } from 'lossless-json'
import type { components, operations, paths } from '../service/generated/openapi.ts'

type CreatePlant = operations['createPlant']
type Responses = CreatePlant['responses']

/** A plant to create: `NewPlant` of openapi.yaml, its int64 `id` an exact `bigint` (−2^63 … 2^63−1). */
export type NewPlant = components['schemas']['NewPlant']

/** Every HTTP status openapi.yaml declares for `createPlant`. */
export type CreatePlantStatus = keyof Responses

/** The JSON body a declared response carries. */
type JsonBody<Response> = Response extends { content: { 'application/json': infer Body } } ? Body : never

/**
 * The answer to `createPlant`, one member per declared status, discriminated by
 * `status`: `{ status: 200, body: Plant }`, `{ status: 400, body: Error }`, …
 * `headers` are the response's; for 429 and 503 `Retry-After` holds the seconds to
 * wait (RFC 9110 §10.2.3), for 401 `WWW-Authenticate` the bearer challenge (RFC 6750 §3).
 */
export type CreatePlantResult = {
  [Status in CreatePlantStatus]: {
    readonly status: Status
    readonly body: JsonBody<Responses[Status]>
    readonly headers: Headers
  }
}[CreatePlantStatus]

/** The declared statuses at run time; the compiler holds the list to the generated type (none missing, none extra). */
const DECLARED: { readonly [Status in CreatePlantStatus]: true } = {
  200: true,
  400: true,
  401: true,
  408: true,
  409: true,
  413: true,
  414: true,
  415: true,
  429: true,
  431: true,
  500: true,
  501: true,
  502: true,
  503: true,
  504: true,
  505: true,
}

/** The operation's path, relative to the base URL; the compiler holds it to the contract's `paths`. */
const PATH = 'plants' satisfies keyof paths extends `/${infer Path}` ? Path : never

/** The exchange failed before a complete answer arrived; `cause` is what `fetch` (or reading the body) threw. */
export class PlantStoreNetworkError extends Error {
  /**
   * @param message - what failed.
   * @param cause - the underlying error: a `TypeError` of `fetch` (connection refused
   *   or reset, DNS), or a `DOMException` named `TimeoutError` or `AbortError`.
   */
  constructor(message: string, cause: unknown) {
    super(message, { cause })
    this.name = 'PlantStoreNetworkError'
  }
}

/** An answer outside the contract: a status it does not declare, or a body that is not a JSON object. */
export class PlantStoreResponseError extends Error {
  readonly status: number
  readonly body: string

  /**
   * @param status - the HTTP status received.
   * @param body - the response body as text, for diagnosis.
   */
  constructor(status: number, body: string) {
    super(`Unexpected answer to createPlant: HTTP ${status}`)
    this.status = status
    this.body = body
    this.name = 'PlantStoreResponseError'
  }
}

/** Options of a {@link PlantStoreClient}. */
export interface PlantStoreClientOptions {
  /**
   * Where the service is mounted, e.g. `http://127.0.0.1:3000` or
   * `https://gateway.example/plant-store/`; `plants` is resolved below it.
   */
  readonly baseUrl: string | URL
  /** Bearer token sent as `Authorization: Bearer <token>` (RFC 6750 §2.1); none when omitted (the service answers 401). */
  readonly token?: string
  /** Most time for one request, from sending to the end of the body, in milliseconds; no limit when omitted. */
  readonly timeoutMs?: number
}

/** A client of the Plant Store for `createPlant`, exact on int64 ids. */
export class PlantStoreClient {
  readonly #url: URL
  readonly #headers: Record<string, string>
  readonly #timeoutMs: number | undefined

  /** @param options - base URL, token and timeout; see {@link PlantStoreClientOptions}. */
  constructor(options: PlantStoreClientOptions) {
    const base = new URL(options.baseUrl)
    if (!base.pathname.endsWith('/')) base.pathname += '/'
    this.#url = new URL(PATH, base)
    this.#headers = { accept: 'application/json', 'content-type': 'application/json' }
    if (options.token !== undefined) this.#headers.authorization = `Bearer ${options.token}`
    this.#timeoutMs = options.timeoutMs
  }

  /**
   * `createPlant`: `POST /plants` with the plant as JSON, `id` written exactly.
   *
   * @param plant - the plant; `id` within −2^63 … 2^63−1 (outside it, the service answers 400).
   * @param init - `signal` to abort the request.
   * @returns the answer, whatever its declared status: 200 with the stored Plant (also
   *   for an idempotent replay), 409 when the id is stored with other content, 400,
   *   401, 413, 429, 503 … with the `Error` body. Narrow on `status`.
   * @throws {PlantStoreNetworkError} when no complete answer arrives: the connection
   *   fails, `timeoutMs` passes, or `signal` aborts.
   * @throws {PlantStoreResponseError} when the answer is outside the contract (an
   *   undeclared status or a body that is not a JSON object).
   */
  async createPlant(plant: NewPlant, init: { readonly signal?: AbortSignal } = {}): Promise<CreatePlantResult> {
    const signals = [
      init.signal,
      this.#timeoutMs === undefined ? undefined : AbortSignal.timeout(this.#timeoutMs),
    ].filter((s) => s !== undefined)
    let response: Response
    try {
      response = await fetch(this.#url, {
        method: 'POST',
        headers: this.#headers,
        body: stringify(plant)!,
        signal: signals.length === 0 ? null : AbortSignal.any(signals),
      })
    } catch (error) {
      throw new PlantStoreNetworkError(`createPlant: no answer from ${this.#url.origin}`, error)
    }
    return readCreatePlantResponse(response)
  }
}

/**
 * Reads a `fetch` response to `POST /plants` into a {@link CreatePlantResult}, by the
 * same rules as {@link PlantStoreClient.createPlant}: for requests sent otherwise.
 *
 * @throws {PlantStoreNetworkError} when the body cannot be read to its end.
 * @throws {PlantStoreResponseError} for an undeclared status or a body that is not a JSON object.
 */
export async function readCreatePlantResponse(response: Response): Promise<CreatePlantResult> {
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    throw new PlantStoreNetworkError('createPlant: the answer was cut off', error)
  }
  const { status, headers } = response
  if (!Object.hasOwn(DECLARED, status)) throw new PlantStoreResponseError(status, text)
  let body: unknown
  try {
    body = parse(text, null, parseNumber)
  } catch {
    throw new PlantStoreResponseError(status, text)
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new PlantStoreResponseError(status, text)
  // The body's shape is the contract's: the service's own tests hold its answers to openapi.yaml.
  return { status, body, headers } as CreatePlantResult
}

/** The service's number rule: integers beyond 2^53 exactly, as `bigint`; every other number as a `number`. */
function parseNumber(literal: string): number | bigint {
  return isInteger(literal) && !isSafeNumber(literal) ? BigInt(literal) : Number(literal)
}
