/**
 * The load of the benchmark: wrk (a C load generator, Debian package `wrk`) with
 * `post-plants.lua`, sending `POST /plants` with a fresh plant id in every request,
 * a valid bearer token and `content-type: application/json`, and checking every
 * answer against the expected Plant.
 *
 * wrk, not an in-process generator: autocannon in the benchmark's own Node process
 * saturated its core before the raw ceiling did, so the ceiling measured autocannon.
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'

/** The plant every benchmark request creates (the id aside). */
export const BENCH_PLANT = { name: 'Monstera deliciosa', tag: 'indoor' } as const
/** The Plant a 200 carries for {@link BENCH_PLANT}, byte for byte (properties in schema order). */
export const EXPECTED_BODY = JSON.stringify(BENCH_PLANT)

/** Ids are `base + offset` with offset below this: wrk's Lua writes the offset as the last 12 digits. */
const OFFSETS = 10n ** 12n
/** Ids reserved per wrk thread and run: more than a thread sends in 600 s at 1.5 M req/s. */
export const IDS_PER_THREAD = 10n ** 9n

/**
 * Hands out plant ids that never repeat within one benchmark run, across
 * connections, warm-ups and targets (one instance per run).
 *
 * The run starts from a random base in [2^61, 2^62), a multiple of 10^12, so that
 * runs against a shared PostgreSQL database do not collide with each other or with
 * other rows, and the ids exercise the exact 64-bit path (above 2^53) of the service.
 */
export class PlantIds {
  /** First id of this run. */
  readonly base: bigint
  #issued = 0n

  constructor() {
    const first = 2n ** 61n / OFFSETS + 1n
    const last = 2n ** 62n / OFFSETS - 1n
    this.base = (first + (randomBytes(8).readBigUInt64BE() % (last - first))) * OFFSETS
  }

  /** The next unused id. */
  next(): bigint {
    return this.base + this.reserve(1n)
  }

  /**
   * Reserves `count` consecutive ids.
   * @returns the offset of the first from {@link base}.
   * @throws when the run's 10^12 ids are used up.
   */
  reserve(count: bigint): bigint {
    const first = this.#issued
    if (first + count > OFFSETS) throw new Error('plant ids of this run used up')
    this.#issued += count
    return first
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

/** One run of wrk against one target. */
export interface LoadOptions {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  readonly token: string
  readonly ids: PlantIds
  readonly connections: number
  /** Seconds. */
  readonly duration: number
  /** wrk threads (default 1). */
  readonly threads?: number
  /** Core to pin wrk to (`taskset -c`), when given. */
  readonly core?: number
  /** `taskset`, needed with `core`. */
  readonly taskset?: string
  /** Seconds before a request counts as a timeout (default 10). */
  readonly timeoutS?: number
  /** Told the responses so far, every 100 responses (one thread only). */
  readonly onProgress?: (responses: number) => void
}

/** What one run measured. */
export interface LoadSummary {
  /** Responses per second over the run. */
  readonly requestsPerSecond: number
  /** Responses received (wrk's count). */
  readonly responses: number
  /** Seconds wrk ran (its own clock). */
  readonly seconds: number
  /** Latency percentiles, mean and maximum, ms (wrk records µs). */
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number; readonly mean: number }
  /** Socket errors and timeouts (connect, read, write, timeout). */
  readonly errors: number
  /** Responses with a status outside 2xx. */
  readonly non2xx: number
  /** 2xx responses whose body was not the expected Plant. */
  readonly wrongBodies: number
  /** Responses by status code. */
  readonly statuses: Readonly<Record<string, number>>
  /** CPU time of wrk over the run, % of one core (per thread: 100 = saturated). */
  readonly generatorCpuPercent: number
  /** Plant ids this run used: [`firstId`, `firstId + idCount`); a sent request that was not answered used one too. */
  readonly firstId: bigint
  readonly idCount: bigint
}

/** The line `post-plants.lua` prints at the end. */
interface WrkResult {
  durationUs: number
  requests: number
  statuses: Record<string, number>
  wrongBodies: number
  errors: { connect: number; read: number; write: number; timeout: number }
  latencyUs: { p50: number; p99: number; max: number; mean: number }
  cpuS: number
}

const SCRIPT = fileURLToPath(new URL('../../bench/post-plants.lua', import.meta.url))

/**
 * Parses the output of `post-plants.lua` into a summary.
 * @throws when the result line is missing (wrk failed; the message carries its output).
 */
export function parseWrk(output: string, threads: number, firstId: bigint, idCount: bigint): LoadSummary {
  const line = output.split('\n').find((text) => text.startsWith('bench-result '))
  if (line === undefined) throw new Error(`wrk gave no result: ${output.trim().slice(-500)}`)
  const result = JSON.parse(line.slice('bench-result '.length)) as WrkResult
  const seconds = result.durationUs / 1e6
  const non2xx = Object.entries(result.statuses).reduce(
    (sum, [status, count]) => sum + (status.startsWith('2') ? 0 : count),
    0,
  )
  const ms = (us: number) => us / 1000
  return {
    requestsPerSecond: result.requests / seconds,
    responses: result.requests,
    seconds,
    latencyMs: {
      p50: ms(result.latencyUs.p50),
      p99: ms(result.latencyUs.p99),
      max: ms(result.latencyUs.max),
      mean: ms(result.latencyUs.mean),
    },
    errors: result.errors.connect + result.errors.read + result.errors.write + result.errors.timeout,
    non2xx,
    wrongBodies: result.wrongBodies,
    statuses: result.statuses,
    generatorCpuPercent: (100 * result.cpuS) / seconds / threads,
    firstId,
    idCount,
  }
}

/**
 * Runs wrk against `POST /plants` for `duration` seconds; every request gets a new
 * id of `ids`. A warm-up is a run of its own, before, whose result is dropped.
 * @returns the run's summary.
 * @throws when wrk cannot run or prints no result.
 */
export async function runLoad(options: LoadOptions): Promise<LoadSummary> {
  const threads = options.threads ?? 1
  const first = options.ids.reserve(BigInt(threads) * IDS_PER_THREAD)
  const wrk = [
    'wrk',
    `-t${threads}`,
    `-c${options.connections}`,
    `-d${options.duration}s`,
    '--timeout',
    `${options.timeoutS ?? 10}s`,
    '-s',
    SCRIPT,
    options.url,
    '--',
    String(options.ids.base / OFFSETS),
    String(first),
    String(IDS_PER_THREAD),
    EXPECTED_BODY,
  ]
  const command =
    options.core === undefined || options.taskset === undefined
      ? wrk
      : [options.taskset, '-c', String(options.core), ...wrk]
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', BENCH_TOKEN: options.token }
  if (options.onProgress !== undefined) env.BENCH_PROGRESS = '1'
  const child = spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  let pending = ''
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8')
    const lines = pending.split('\n')
    pending = lines.pop()!
    for (const line of lines) {
      if (line.startsWith('progress ')) options.onProgress?.(Number(line.slice('progress '.length)))
      else output += `${line}\n`
    }
  })
  child.once('close', () => (output += pending))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  const timer = setTimeout(() => child.kill('SIGKILL'), (options.duration + (options.timeoutS ?? 10) + 30) * 1000)
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  }).finally(() => clearTimeout(timer))
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${output.trim().slice(-500)}`)
  return parseWrk(output, threads, options.ids.base + first, BigInt(threads) * IDS_PER_THREAD)
}
