/**
 * Soak mode of the benchmark (`BENCH_SOAK=<seconds>`): steady, rate-limited load
 * against the service on its embedded store, sampled every window (10 s): memory
 * of the process and latency of the window. A leak or a slowing store shows as a
 * difference between the first and the last third of the samples.
 *
 * The load is autocannon's (programmatic API), not wrk's: a soak needs a fixed
 * request rate, which Debian's wrk does not have (wrk2 is not packaged), and at a
 * few thousand req/s autocannon uses a fraction of its core. The soak is a series of
 * back-to-back autocannon runs of one window each (same id sequence, so ids still
 * never repeat); between two windows the connections are re-opened, a pause of a
 * few milliseconds. autocannon's rate limit gives each connection a quota per
 * second, which it sends back to back at the start of the second: the load comes
 * in bursts of `rate` requests with at most `connections` in flight, and latency
 * includes that queueing.
 *
 * autocannon ships no typings (and `@types/autocannon` is not installed), so the
 * part of its API used here is declared below and the CommonJS module is loaded
 * with `createRequire`.
 *
 * @module
 */
import { createRequire } from 'node:module'
import { EXPECTED_BODY, jsonHeaders, type PlantIds } from './load.ts'
import type { ServerProcess } from './process.ts'

/** The options of autocannon used here (see its README, "API"). */
interface AutocannonOptions {
  url: string
  connections: number
  /** Seconds. */
  duration: number
  /** Requests per second across all connections. */
  overallRate: number
  /** Seconds before a request counts as a timeout (an error). */
  timeout: number
  /** Called with every response body; false counts a mismatch. */
  verifyBody: (body: string) => boolean
  requests: {
    method: string
    path: string
    headers: Record<string, string>
    setupRequest: (request: object) => object
  }[]
}

/** The part of autocannon's result used here (latency in whole ms). */
interface AutocannonResult {
  latency: { p50: number; p99: number; max: number }
  requests: { average: number }
  errors: number
  mismatches: number
  non2xx: number
}

const autocannon = createRequire(import.meta.url)('autocannon') as (
  options: AutocannonOptions,
) => Promise<AutocannonResult>

/** One window of the soak. */
export interface SoakSample {
  /** Seconds since the soak started, at the end of the window. */
  readonly atS: number
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly errors: number
  readonly non2xx: number
  /** Resident memory (VmRSS) at the end of the window, MB. */
  readonly rssMb: number
}

/** What to run. */
export interface SoakOptions {
  readonly server: ServerProcess
  readonly token: string
  readonly ids: PlantIds
  readonly connections: number
  /** Total seconds of load. */
  readonly seconds: number
  /** Requests per second over all connections. */
  readonly rate: number
  /** Seconds per sample; default 10. */
  readonly windowS?: number
}

/**
 * Runs the soak.
 * @returns one sample per window.
 * @throws when the server exits during the soak.
 */
export async function runSoak(options: SoakOptions): Promise<SoakSample[]> {
  const windowS = options.windowS ?? 10
  const windows = Math.max(3, Math.round(options.seconds / windowS))
  const samples: SoakSample[] = []
  for (let index = 0; index < windows; index++) {
    const load = await autocannon({
      url: options.server.url,
      connections: options.connections,
      duration: windowS,
      overallRate: options.rate,
      timeout: 10,
      verifyBody: (body) => body === EXPECTED_BODY,
      requests: [
        {
          method: 'POST',
          path: '/plants',
          headers: jsonHeaders(options.token),
          setupRequest: (request) => ({ ...request, body: options.ids.body() }),
        },
      ],
    })
    const rssMb = options.server.rssMb()
    if (rssMb === undefined) {
      throw new Error(
        `the service exited (${options.server.exitStatus() ?? 'unknown'}) after ${index * windowS} to ${(index + 1) * windowS} s of soak: ${options.server.output().trim() || 'no output'}`,
      )
    }
    samples.push({
      atS: (index + 1) * windowS,
      requestsPerSecond: load.requests.average,
      p50Ms: load.latency.p50,
      p99Ms: load.latency.p99,
      maxMs: load.latency.max,
      errors: load.errors,
      // A non-2xx body differs from the Plant too; autocannon counts both as mismatches.
      non2xx: Math.max(load.non2xx, load.mismatches),
      rssMb,
    })
    process.stdout.write(
      `  soak ${samples.at(-1)!.atS} s: ${Math.round(load.requests.average)} req/s, p99 ${load.latency.p99} ms, RSS ${rssMb.toFixed(1)} MB\n`,
    )
  }
  return samples
}

const mean = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * Compares the first and the last third of a series by their medians (one noisy
 * window, e.g. another process on the machine, does not decide it).
 * @returns the two medians and the relative change (last ÷ first − 1).
 */
export function trend(values: readonly number[]): { first: number; last: number; change: number } {
  const third = Math.max(1, Math.floor(values.length / 3))
  const first = median(values.slice(0, third))
  const last = median(values.slice(-third))
  return { first, last, change: first === 0 ? 0 : last / first - 1 }
}

/**
 * Renders the soak section of the report. Growth is called when the last third's
 * median RSS is more than 10 % and 5 MB above the first third's, or its median p99
 * more than 50 % and 1 ms above: thresholds above the noise seen between windows on
 * these machines.
 */
export function renderSoak(
  date: Date,
  options: Omit<SoakOptions, 'server' | 'token' | 'ids'>,
  samples: readonly SoakSample[],
  pinning: string,
  loadAverage: readonly [start: number, end: number],
): string {
  const lastThird = samples.slice(-Math.max(1, Math.floor(samples.length / 3))).map((sample) => sample.rssMb)
  const rss = trend(samples.map((sample) => sample.rssMb))
  const p99 = trend(samples.map((sample) => sample.p99Ms))
  const errors = samples.reduce((sum, sample) => sum + sample.errors, 0)
  const non2xx = samples.reduce((sum, sample) => sum + sample.non2xx, 0)
  const rssGrows = rss.change > 0.1 && rss.last - rss.first > 5
  const p99Grows = p99.change > 0.5 && p99.last - p99.first > 1
  const percent = (value: number) => `${value >= 0 ? '+' : ''}${(value * 100).toFixed(1)} %`
  return [
    `Run ${date.toISOString()}: ${samples.length * (options.windowS ?? 10)} s of steady load against the service on the embedded store, ` +
      `${options.rate} req/s over ${options.connections} connections (autocannon \`overallRate\`: each connection sends its quota at the start of every second, ` +
      `so the load is a burst per second with at most ${options.connections} requests in flight), sampled every ${options.windowS ?? 10} s. ${pinning}.`,
    '',
    `- RSS (median of the window samples): first third ${rss.first.toFixed(1)} MB, last third ${rss.last.toFixed(1)} MB (${percent(rss.change)}): ${rssGrows ? '**growth trend**' : 'no growth trend'}.`,
    `- p99 (median of the windows' p99): first third ${p99.first.toFixed(1)} ms, last third ${p99.last.toFixed(1)} ms (${percent(p99.change)}): ${p99Grows ? '**growth trend**' : 'no growth trend'}.`,
    `- RSS over the last third: ${Math.min(...lastThird).toFixed(1)} to ${Math.max(...lastThird).toFixed(1)} MB.`,
    `- Achieved load: ${Math.round(mean(samples.map((sample) => sample.requestsPerSecond)))} req/s on average (asked ${options.rate}); machine load average (1 min) ${loadAverage[0].toFixed(2)} → ${loadAverage[1].toFixed(2)}.`,
    `- Errors: ${errors}; non-2xx or wrong bodies: ${non2xx}.`,
    '',
    '| at s | req/s | p50 ms | p99 ms | max ms | errors | non-2xx | RSS MB |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...samples.map(
      (s) =>
        `| ${s.atS} | ${Math.round(s.requestsPerSecond)} | ${s.p50Ms} | ${s.p99Ms} | ${s.maxMs} | ${s.errors} | ${s.non2xx} | ${s.rssMb.toFixed(1)} |`,
    ),
  ].join('\n')
}
