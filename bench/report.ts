/**
 * The benchmark's report, `docs/benchmarks.md`: machine, settings, results,
 * targets. Regenerating it keeps two parts: the soak section when no soak ran this
 * time (between {@link SOAK_START} and {@link SOAK_END}), and everything from
 * {@link HAND_WRITTEN} on (the profile, written by hand).
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, release, totalmem } from 'node:os'
import { dirname } from 'node:path'
import type { LoadSummary } from './load.js'
import type { StoreActivity } from './metrics.js'

/** Marks the start of the hand-written part; it and everything below it are kept. */
export const HAND_WRITTEN = '<!-- Hand-written below this line: `npm run bench` keeps it when it regenerates the report. -->'
/** Soak section delimiters: kept as they are when a run has no soak. */
export const SOAK_START = '<!-- soak:start -->'
/** End marker of the soak section, which a run without a soak keeps as it is. */
export const SOAK_END = '<!-- soak:end -->'

/** One target's outcome. */
export interface TargetResult {
  readonly key: 'raw' | 'durable' | 'unstored' | 'embedded' | 'postgres'
  readonly title: string
  /** Why it was not measured, when it was not. */
  readonly notRun?: string
  readonly load?: LoadSummary
  /** Resident memory (VmRSS) of the server process once ready, before any load, MB. */
  readonly readyRssMb?: number | undefined
  /** Peak RSS (VmHWM) of the server process after the run, MB. */
  readonly peakRssMb?: number
  /** Spawn to first answered request, ms, on a fresh data directory (or a first start). */
  readonly readyMs?: number
  /** The same on a second start over the data the run left. */
  readonly readyAgainMs?: number
  /** Store transactions during the measured run, from the service's metrics. */
  readonly store?: StoreActivity
}

/** What the run was. */
export interface RunSettings {
  readonly durationS: number
  readonly warmupS: number
  readonly connections: number
  /** What was pinned to which core, in words. */
  readonly pinning: string
  readonly idBase: bigint
  readonly databaseUrl: string
  /** The service measured: its commit, and whether its sources differ from it. */
  readonly revision: string
  /** Whether the service processes ran under `node --cpu-prof` (slower). */
  readonly profiled: boolean
  /** 1-minute load average of the machine when the run started and ended (others' work shows here). */
  readonly loadAverage: readonly [start: number, end: number]
}

const number = (value: number, digits = 0): string =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
/** Milliseconds; autocannon's latencies are whole milliseconds, shown as such. */
const ms = (value: number | undefined): string => (value === undefined ? 'n/a' : number(value, Number.isInteger(value) || value >= 10 ? 0 : 2))
const mb = (value: number | undefined): string => (value === undefined ? 'n/a' : number(value, 1))

function osName(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

/** The machine, as a Markdown table. */
export function machineSection(date: Date): string {
  return [
    '| | |',
    '|---|---|',
    `| CPU | ${cpus()[0]?.model ?? 'unknown'} |`,
    `| cores | ${cpus().length} |`,
    `| memory | ${number(totalmem() / 2 ** 30, 1)} GiB |`,
    `| Node | ${process.version} |`,
    `| OS | ${osName()}, Linux ${release()} |`,
    `| date | ${date.toISOString()} |`,
  ].join('\n')
}

function resultRow(result: TargetResult, ceiling: number | undefined): string {
  if (result.load === undefined) return `| ${result.title} | not run: ${result.notRun ?? 'unknown'} |${' |'.repeat(9)}`
  const load = result.load
  const ratio = ceiling === undefined ? 'n/a' : number(load.requestsPerSecond / ceiling, 2)
  const wrong = load.wrongBodies === 0 ? '' : `, ${load.wrongBodies} wrong bodies`
  const other = Object.entries(load.statuses).filter(([status]) => !status.startsWith('2'))
  const detail = other.length === 0 && wrong === '' ? '' : ` (${other.map(([status, count]) => `${status}: ${count}`).join(', ')}${wrong})`
  const cpu = `${load.serverCpuPercent === undefined ? 'n/a' : number(load.serverCpuPercent)} / ${number(load.generatorCpuPercent)}`
  return (
    `| ${result.title} | ${number(load.requestsPerSecond)} | ${ratio} | ${ms(load.latencyMs.p50)} | ${ms(load.latencyMs.p99)} | ` +
    `${ms(load.latencyMs.max)} | ${load.errors} / ${load.non2xx}${detail} | ${mb(result.readyRssMb)} → ${mb(result.peakRssMb)} | ${ms(result.readyMs)} | ${ms(result.readyAgainMs)} | ${cpu} |`
  )
}

/** Group-commit activity of the service targets, read from their `/metrics`. */
function storeSection(results: readonly TargetResult[], durationS: number): string[] {
  const rows = results.flatMap((result) =>
    result.store === undefined || result.key === 'unstored'
      ? []
      : [`| ${result.title} | ${number(result.store.transactions)} | ${number(result.store.transactions / durationS)} | ${number(result.store.meanBatch, 1)} | ${ms(result.store.meanTransactionMs)} |`],
  )
  if (rows.length === 0) return []
  return [
    'Store transactions during the measured run (group commit; from the service\'s own `/metrics`):',
    '',
    '| target | transactions | per second | plants per transaction | ms per transaction |',
    '|---|---:|---:|---:|---:|',
    ...rows,
    '',
  ]
}

/** The issue's throughput targets: req/s of each service target ÷ the ceiling's. */
const RATIO_TARGETS = { embedded: 0.75, postgres: 0.5 } as const

/** One target check of the issue: what, threshold, measured, pass. */
interface Check {
  readonly what: string
  readonly threshold: string
  readonly measured: string
  readonly pass: boolean | undefined
}

function checks(results: readonly TargetResult[], ceiling: number | undefined): Check[] {
  const out: Check[] = []
  const minRatio = RATIO_TARGETS
  for (const result of results) {
    const key = result.key
    if (key === 'raw' || key === 'durable' || key === 'unstored') continue
    const load = result.load
    const add = (what: string, threshold: string, measured: number | undefined, pass: (value: number) => boolean, format = ms) =>
      out.push({ what: `${result.title}: ${what}`, threshold, measured: load === undefined ? `not run` : format(measured), pass: load === undefined || measured === undefined ? undefined : pass(measured) })
    const ratio = load !== undefined && ceiling !== undefined ? load.requestsPerSecond / ceiling : undefined
    add('req/s ÷ ceiling', `≥ ${minRatio[key]}`, ratio, (v) => v >= minRatio[key], (v) => (v === undefined ? 'n/a' : number(v, 2)))
    add('p99 latency', '< 10 ms', load?.latencyMs.p99, (v) => v < 10)
    add('peak RSS', '< 150 MB', result.peakRssMb, (v) => v < 150, mb)
    add('ready on an existing data directory', '< 1,000 ms', result.readyAgainMs, (v) => v < 1000)
    add('errors + non-2xx + wrong bodies', '0', load ? load.errors + load.non2xx + load.wrongBodies : undefined, (v) => v === 0, (v) => String(v))
  }
  return out
}

/**
 * Server time per request, µs: 1,000,000 ÷ req/s, the time each request holds the
 * server's one core (CPU, and the waits that block its event loop, such as SQLite's
 * fsync), as long as the server, not the load generator, is the bottleneck.
 */
function usPerRequest(result: TargetResult | undefined): number | undefined {
  const rps = result?.load?.requestsPerSecond
  return rps === undefined || rps === 0 ? undefined : 1e6 / rps
}

/**
 * What each ratio target allows per request, against what the service spends with
 * and without its database write (the `unstored` ablation): a target needs
 * `ratio × ceiling` req/s, so it allows `1 / (ratio × ceiling)` per request.
 */
function costSection(results: readonly TargetResult[], ceiling: number | undefined): string[] {
  const base = usPerRequest(results.find((result) => result.key === 'unstored'))
  const durable = results.find((result) => result.key === 'durable')?.load?.requestsPerSecond
  const againstDurable = results.flatMap((result) =>
    durable === undefined || result.load === undefined || (result.key !== 'embedded' && result.key !== 'postgres')
      ? []
      : [`${result.title} ${number(result.load.requestsPerSecond / durable, 2)}`],
  )
  const durableLine =
    againstDurable.length === 0
      ? []
      : [`Against the durable ceiling (${number(durable!)} req/s, a raw server that commits each plant to SQLite before its 200): ${againstDurable.join('; ')}.`, '']
  if (ceiling === undefined || base === undefined) return durableLine
  const minRatio = RATIO_TARGETS
  const rows = results.flatMap((result) => {
    if (result.key !== 'embedded' && result.key !== 'postgres') return []
    const spent = usPerRequest(result)
    if (spent === undefined) return []
    const budget = 1e6 / (minRatio[result.key] * ceiling)
    return [`| ${result.title} | ${minRatio[result.key]} | ${number(budget, 1)} | ${number(base, 1)} | ${number(budget - base, 1)} | ${number(spent, 1)} | ${number(spent - base, 1)} |`]
  })
  return [
    'Server time per request (µs = 1,000,000 ÷ req/s, the time each request holds the server\'s one core): what each ratio target allows, what the service takes with its database write skipped (the ablation), hence what storing may cost, against what it costs:',
    '',
    '| target | ratio | allowed µs | µs without the write | left for storing | µs with the store | storing costs |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    ...durableLine,
  ]
}

/**
 * Renders the generated part of the report (everything above the soak section).
 */
export function renderResults(date: Date, settings: RunSettings, results: readonly TargetResult[]): string {
  const ceiling = results.find((result) => result.key === 'raw')?.load?.requestsPerSecond
  const verdict = (pass: boolean | undefined) => (pass === undefined ? 'not measured' : pass ? '**pass**' : '**FAIL**')
  return [
    '# Benchmarks',
    '',
    `<!-- Generated by \`npm run bench\` (bench/run.ts) on ${date.toISOString()}. Edit only below the hand-written marker. -->`,
    '',
    'Side-by-side throughput, latency, memory and start-up of `POST /plants`: a raw',
    '`node:http` server (the ceiling: auth check, JSON parse, JSON write, nothing stored)',
    'and the service on its embedded store and on PostgreSQL. Two references show what',
    'storing durably costs: the raw server committing each plant to SQLite (the durable',
    'ceiling) and the service with its database write skipped (an ablation). Shared, noisy',
    'virtual machines: read the ratios, not the absolute numbers.',
    '',
    '## Machine',
    '',
    machineSection(date),
    `| load average (1 min), start → end of the targets | ${number(settings.loadAverage[0], 2)} → ${number(settings.loadAverage[1], 2)} |`,
    '',
    '## Settings',
    '',
    `- Load: autocannon 9 (programmatic API), \`POST /plants\`, ${settings.connections} connections, no pipelining, ` +
      `${settings.warmupS} s warm-up then ${settings.durationS} s measured per target; req/s is the mean of autocannon's per-second samples.`,
    `- Every request carries a new id (never repeated across connections, warm-ups and targets), counting up from a random base (this run: ${settings.idBase}, between 2^61 and 2^62, so above 2^53), a valid bearer token and \`content-type: application/json\`; a 200 must carry exactly the Plant.`,
    `- Pinning: ${settings.pinning}.`,
    `- CPU profiler: ${settings.profiled ? '**on** (`node --cpu-prof`): the service figures are lower than in a plain run' : 'off'}.`,
    `- Service measured: ${settings.revision}, built by \`npm run build\`.`,
    '- Service: `dist/service/server.js` with `NODE_ENV=production`, `LOG_LEVEL=warn`, `RATE_LIMIT_MAX=1000000000` (the per-token limit still runs on every request but never trips under one token), a fresh temporary `DATA_DIR`, every other setting at its default; PostgreSQL target with ' +
      `\`DATABASE_URL=${settings.databaseUrl}\` (its rows are deleted afterwards, by id range).`,
    '- Latency: autocannon records whole milliseconds (a p99 of 1 means under 2 ms).',
    '- Ready: spawn of the process → first `POST /plants` answered 200 (probed every 5 ms). "again" is a second start on the data the run left behind.',
    '- RSS: `VmRSS` of the server process right after it became ready (idle), and its peak (`VmHWM`) after the run. CPU %: CPU time of the server process and of the load generator during the measured run, as % of one core (100 = its core saturated).',
    '',
    '## Results',
    '',
    '| target | req/s | ÷ ceiling | p50 ms | p99 ms | max ms | errors / non-2xx | RSS MB at ready → peak | ready ms | ready again ms | CPU % server / load generator |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map((result) => resultRow(result, ceiling)),
    '',
    ...results
      .filter((result) => (result.load?.generatorCpuPercent ?? 0) >= 95)
      .map((result) => `The load generator saturated its core against ${result.title}: that figure is a lower bound of what the server can do${result.key === 'raw' ? ', so every ratio to the ceiling is optimistic' : ''}.\n`),
    ...storeSection(results, settings.durationS),
    ...costSection(results, ceiling),
    '## Targets',
    '',
    '| target | threshold | measured | result |',
    '|---|---|---:|---|',
    ...checks(results, ceiling).map((check) => `| ${check.what} | ${check.threshold} | ${check.measured} | ${verdict(check.pass)} |`),
    '',
  ].join('\n')
}

const PROFILE_PLACEHOLDER = `${HAND_WRITTEN}

## Profile

Not written yet: run \`BENCH_PROFILE=<dir> npm run bench\`, summarise a profile with
\`node dist/bench/profile.js <dir>/embedded/*.cpuprofile\` and write the findings here.
`

/**
 * Writes the report: the generated part, then the soak section (this run's, or the
 * previous one kept), then the hand-written part kept from the previous report.
 * @param soak - this run's soak section (without delimiters), or `undefined` when none ran.
 */
export function writeReport(path: string, generated: string, soak: string | undefined): void {
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : ''
  const handIndex = previous.indexOf(HAND_WRITTEN)
  const handWritten = handIndex === -1 ? PROFILE_PLACEHOLDER : previous.slice(handIndex)
  const start = previous.indexOf(SOAK_START)
  const end = previous.indexOf(SOAK_END)
  const keptSoak = start !== -1 && end > start ? previous.slice(start + SOAK_START.length, end).trim() : undefined
  const soakBody = soak ?? keptSoak ?? 'No soak run yet: `BENCH_SOAK=300 npm run bench` runs one (seconds of steady load).'
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, `${generated}\n## Soak\n\n${SOAK_START}\n${soakBody.trim()}\n${SOAK_END}\n\n${handWritten.trimEnd()}\n`)
}
