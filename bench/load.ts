/**
 * The load: wrk with `post-plants.lua` (a new plant id per request, every answer checked). wrk, not an in-process
 * generator: autocannon in the benchmark's process saturated its own core before the raw ceiling did.
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'

/** The Plant a 200 carries, byte for byte (the request's id aside). */
export const EXPECTED_BODY = '{"name":"Monstera deliciosa","tag":"indoor"}'

/** wrk's Lua writes the offset from `base` as an id's last 12 digits. */
const OFFSETS = 10n ** 12n
const IDS_PER_RUN = 10n ** 9n

/**
 * Plant ids that never repeat within one benchmark run: from a random multiple of 10^12 in [2^61, 2^62), so runs
 * sharing a PostgreSQL database do not collide, and every id is past 2^53 (the service's exact path).
 */
export class PlantIds {
  base: bigint
  #issued = 0n

  constructor() {
    const [first, last] = [2n ** 61n / OFFSETS + 1n, 2n ** 62n / OFFSETS - 1n]
    this.base = (first + (randomBytes(8).readBigUInt64BE() % (last - first))) * OFFSETS
  }

  /** @returns the offset from `base` of the first of `count` new ids. @throws when the run's 10^12 are used. */
  reserve(count: bigint): bigint {
    if (this.#issued + count > OFFSETS) throw new Error('plant ids of this run used up')
    this.#issued += count
    return this.#issued - count
  }

  /** Ids used: `base` … `base + issued - 1`. */
  get issued(): bigint {
    return this.#issued
  }

  /** A NewPlant body with the next id. */
  body(): string {
    return `{"id":${this.base + this.reserve(1n)},${EXPECTED_BODY.slice(1)}`
  }
}

export const jsonHeaders = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })

/** What one wrk run measured. */
export interface LoadSummary {
  requestsPerSecond: number
  responses: number
  latencyMs: { readonly p50: number; readonly p99: number; readonly max: number }
  errors: number
  non2xx: number
  wrongBodies: number
  statuses: Readonly<Record<string, number>>
  /** wrk's CPU, % of one core. */
  generatorCpuPercent: number
  /** Its ids: [`firstId`, `firstId + idCount`). */
  firstId: bigint
  idCount: bigint
}

/** Parses the `bench-result {…}` line of `post-plants.lua`. @throws when it is missing. */
export function parseWrk(output: string, firstId: bigint, idCount: bigint): LoadSummary {
  const line = output.split('\n').find((text) => text.startsWith('bench-result '))
  if (line === undefined) throw new Error(`wrk gave no result: ${output.trim().slice(-500)}`)
  const r = JSON.parse(line.slice(13)) as {
    durationUs: number
    requests: number
    statuses: Record<string, number>
    wrongBodies: number
    errors: Record<string, number>
    latencyUs: { p50: number; p99: number; max: number }
    cpuS: number
  }
  const seconds = r.durationUs / 1e6
  const sum = (values: number[]) => values.reduce((total, value) => total + value, 0)
  return {
    requestsPerSecond: r.requests / seconds,
    responses: r.requests,
    latencyMs: { p50: r.latencyUs.p50 / 1000, p99: r.latencyUs.p99 / 1000, max: r.latencyUs.max / 1000 },
    errors: sum(Object.values(r.errors)),
    non2xx: sum(Object.entries(r.statuses).flatMap(([status, count]) => (status.startsWith('2') ? [] : [count]))),
    wrongBodies: r.wrongBodies,
    statuses: r.statuses,
    generatorCpuPercent: (100 * r.cpuS) / seconds,
    firstId,
    idCount,
  }
}

/**
 * Runs wrk (one thread, after the `pin` command) against `<url>/plants`; a request unanswered in `timeoutS` is an
 * error. @throws when it fails.
 */
export async function runLoad(
  url: string,
  token: string,
  ids: PlantIds,
  connections: number,
  seconds: number,
  pin: string[],
  timeoutS = 10,
) {
  const first = ids.reserve(IDS_PER_RUN)
  const script = fileURLToPath(new URL('../../bench/post-plants.lua', import.meta.url))
  const args = [`-t1`, `-c${connections}`, `-d${seconds}s`, '--timeout', `${timeoutS}s`, '-s', script, url]
  args.push('--', String(ids.base / OFFSETS), String(first), EXPECTED_BODY)
  const command = [...pin, 'wrk', ...args]
  // The token goes in the environment: an argument would show in `ps`.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', BENCH_TOKEN: token }
  const child = spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 40) * 1000)
  const code = await new Promise((resolve, reject) => child.once('error', reject).once('close', resolve))
  clearTimeout(timer)
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${output.trim().slice(-500)}`)
  return parseWrk(output, ids.base + first, IDS_PER_RUN)
}
