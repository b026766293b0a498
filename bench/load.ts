/**
 * The load of the benchmark: autocannon (programmatic API) sending `POST /plants`
 * with a fresh plant id in every request, a valid bearer token and
 * `content-type: application/json`.
 *
 * autocannon ships no typings (and `@types/autocannon` is not installed), so the
 * part of its API used here is declared below and the CommonJS module is loaded
 * with `createRequire`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'

/** One request template of autocannon; `setupRequest` runs before every send. */
interface AutocannonRequest {
  method?: string
  path?: string
  headers?: Record<string, string>
  body?: string
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest
}

/** The options of autocannon used here (see its README, "API"). */
interface AutocannonOptions {
  url: string
  connections: number
  /** Seconds. */
  duration: number
  /** Requests per second across all connections; unlimited when absent. */
  overallRate?: number
  /** Seconds before a request counts as a timeout (an error). */
  timeout?: number
  /** Called with every response body; false counts a mismatch. */
  verifyBody?: (body: string) => boolean
  requests: AutocannonRequest[]
}

/** Percentiles and extremes of an autocannon histogram (latency in ms, requests per second). */
interface AutocannonHistogram {
  average: number
  p50: number
  p99: number
  max: number
  total: number
}

/** The part of autocannon's result used here. */
interface AutocannonResult {
  latency: AutocannonHistogram
  requests: AutocannonHistogram & { sent: number }
  errors: number
  timeouts: number
  mismatches: number
  non2xx: number
  statusCodeStats: Record<string, { count: number }>
}

const autocannon = createRequire(import.meta.url)('autocannon') as (options: AutocannonOptions) => Promise<AutocannonResult>

/** The plant every benchmark request creates (the id aside). */
export const BENCH_PLANT = { name: 'Monstera deliciosa', tag: 'indoor' } as const
/** The Plant a 200 carries for {@link BENCH_PLANT}, byte for byte (properties in schema order). */
export const EXPECTED_BODY = JSON.stringify(BENCH_PLANT)

/**
 * Hands out plant ids that never repeat within one benchmark run, across
 * connections, warm-ups and targets (one instance per run, one process: autocannon
 * runs its connections on this thread).
 *
 * The run starts from a random base in [2^61, 2^62), so that runs against a shared
 * PostgreSQL database do not collide with each other or with other rows, and the
 * ids exercise the exact 64-bit path (above 2^53) of the service.
 */
export class PlantIds {
  /** First id of this run. */
  readonly base: bigint
  #issued = 0n

  constructor() {
    this.base = 2n ** 61n + BigInt.asUintN(61, randomBytes(8).readBigUInt64BE())
  }

  /** The next unused id. */
  next(): bigint {
    return this.base + this.#issued++
  }

  /** Ids handed out so far: they are `base` … `base + issued - 1`. */
  get issued(): bigint {
    return this.#issued
  }

  /** A NewPlant request body (JSON text) with the next id. */
  body(): string {
    return `{"id":${this.next()},"name":"${BENCH_PLANT.name}","tag":"${BENCH_PLANT.tag}"}`
  }
}

/** Headers of an authenticated JSON request. */
export function jsonHeaders(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
}

/** One measured run against one target. */
export interface LoadOptions {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  readonly token: string
  readonly ids: PlantIds
  readonly connections: number
  /** Seconds measured. */
  readonly duration: number
  /** Requests per second over all connections; unlimited when absent. */
  readonly overallRate?: number
  /** CPU seconds the server process has used so far, to report its load; optional. */
  readonly serverCpuSeconds?: () => number | undefined
}

/** What one run measured. */
export interface LoadSummary {
  /** Mean requests per second (all statuses). */
  readonly requestsPerSecond: number
  /** Responses received. */
  readonly responses: number
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number; readonly mean: number }
  /** Socket errors and timeouts. */
  readonly errors: number
  readonly non2xx: number
  /** 2xx responses whose body was not the expected Plant. */
  readonly wrongBodies: number
  /** Responses by status code. */
  readonly statuses: Readonly<Record<string, number>>
  /** CPU time of this process (the load generator) during the measured run, % of one core. */
  readonly generatorCpuPercent: number
  /** CPU time of the server process during the measured run, % of one core, when known. */
  readonly serverCpuPercent: number | undefined
}

/**
 * Runs autocannon against `POST /plants`: every request gets the next id of `ids`.
 * A warm-up is a run of its own, before, whose result is dropped.
 * @returns the measured run.
 * @throws when autocannon cannot start (invalid options).
 */
export async function runLoad(options: LoadOptions): Promise<LoadSummary> {
  const cpu = process.cpuUsage()
  const serverCpu = options.serverCpuSeconds?.()
  const started = performance.now()
  const result = await autocannonRun(options)
  const elapsedMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  const generatorCpuPercent = (100 * (used.user + used.system)) / 1000 / elapsedMs
  const serverCpuAfter = options.serverCpuSeconds?.()
  const serverCpuPercent = serverCpu === undefined || serverCpuAfter === undefined ? undefined : (100 * 1000 * (serverCpuAfter - serverCpu)) / elapsedMs
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, { count }]) => [status, count]))
  return {
    requestsPerSecond: result.requests.average,
    responses: result.requests.total,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max, mean: result.latency.average },
    errors: result.errors,
    non2xx: result.non2xx,
    // A non-2xx body differs from the Plant too; autocannon counts both as mismatches.
    wrongBodies: Math.max(0, result.mismatches - result.non2xx),
    statuses,
    generatorCpuPercent,
    serverCpuPercent,
  }
}

function autocannonRun(options: LoadOptions): Promise<AutocannonResult> {
  return autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.duration,
    timeout: 10,
    verifyBody: (body) => body === EXPECTED_BODY,
    ...(options.overallRate === undefined ? {} : { overallRate: options.overallRate }),
    requests: [
      {
        method: 'POST',
        path: '/plants',
        headers: jsonHeaders(options.token),
        setupRequest: (request) => ({ ...request, body: options.ids.body() }),
      },
    ],
  })
}
