/**
 * The benchmark's report, `docs/benchmarks.md`: machine, settings, results, the
 * figures the targets are about and their verdicts. Regenerating it keeps two
 * parts: the soak section when no soak ran this time (between {@link SOAK_START}
 * and {@link SOAK_END}), and everything from {@link HAND_WRITTEN} on (findings,
 * written by hand).
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, release, totalmem } from 'node:os'
import { dirname } from 'node:path'
import type { LoadSummary } from './load.js'
import type { StoreActivity } from './metrics.js'
import type { CpuTimes } from './process.js'

/** Marks the start of the hand-written part; it and everything below it are kept. */
export const HAND_WRITTEN = '<!-- Hand-written below this line: `npm run bench` keeps it when it regenerates the report. -->'
/** Soak section delimiters: kept as they are when a run has no soak. */
export const SOAK_START = '<!-- soak:start -->'
/** End marker of the soak section, which a run without a soak keeps as it is. */
export const SOAK_END = '<!-- soak:end -->'

/**
 * The targets, in the order they run: the ceiling (raw `node:http`, nothing
 * stored), the two durable ceilings (raw `node:http` committing to SQLite, to
 * PostgreSQL), the design floor (Fastify and fastify-openapi-glue on the contract,
 * nothing else), the service with its write skipped (an ablation), the service
 * on each store, and the service on the embedded store with every create traced.
 */
export const TARGET_KEYS = ['raw', 'durable', 'durable-pg', 'floor', 'unstored', 'embedded', 'postgres', 'traced'] as const
export type TargetKey = (typeof TARGET_KEYS)[number]

/** Instructions per request of one target, and how they were counted. */
export interface Instructions {
  readonly perRequest: number
  readonly how: 'perf' | 'callgrind'
  /** callgrind: the lowest and highest count per request of the rounds counted, and their responses. */
  readonly range?: readonly [number, number]
  readonly responses?: number
}

/** One target's outcome. */
export interface TargetResult {
  readonly key: TargetKey
  readonly title: string
  /** Why it was not measured, when it was not. */
  readonly notRun?: string
  readonly load?: LoadSummary
  /** CPU time of the server process (all threads) over the measured run. */
  readonly cpu?: CpuTimes | undefined
  readonly instructions?: Instructions
  /** Resident memory (VmRSS) of the server process once ready, before any load, MB. */
  readonly readyRssMb?: number | undefined
  /** Peak RSS (VmHWM) of the server process after the run, MB. */
  readonly peakRssMb?: number | undefined
  /** Spawn to first `POST /plants` answered 200, ms, on the data the run left (a second start). */
  readonly readyMs?: number
  /** Store transactions during the measured run, from the service's metrics. */
  readonly store?: StoreActivity
  /** Durable targets: rows stored with the ids the measured run sent (read after the server stopped). */
  readonly storedRows?: number
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
  /** How instructions were counted, in words (or why not). */
  readonly instructions: string
  /** Share of each CPU's time the hypervisor gave to others over the targets (`stolenShares`), when known. */
  readonly stolen?: readonly number[] | undefined
}

/**
 * Each CPU's time stolen by the hypervisor between two reads of `/proc/stat`, as a
 * share of that CPU's time: the `steal` column (the 8th after the name, proc(5))
 * over the sum of all its columns but `guest` and `guest_nice`, which `user` and
 * `nice` already count.
 * @param before - `/proc/stat` text at the start; `after` at the end.
 * @returns one share (0–1) per `cpuN` line, in order; `undefined` when the texts do
 *   not list the same CPUs, or a CPU spent no time in between.
 */
export function stolenShares(before: string, after: string): number[] | undefined {
  const perCpu = (text: string) =>
    [...text.matchAll(/^cpu(\d+) (.*)$/gm)].map((line) => line[2]!.trim().split(/\s+/).slice(0, 8).map(Number))
  const [start, end] = [perCpu(before), perCpu(after)]
  if (start.length === 0 || start.length !== end.length) return undefined
  const deltas = start.map((columns, cpu) => end[cpu]!.map((value, column) => value - columns[column]!))
  const totals = deltas.map((delta) => delta.reduce((sum, value) => sum + value, 0))
  return totals.every((total) => total > 0) ? deltas.map((delta, cpu) => delta[7]! / totals[cpu]!) : undefined
}

/** Server CPU per request, µs. */
export interface CpuPerRequest {
  readonly user: number
  readonly system: number
  readonly total: number
}

/**
 * Server CPU time per answered request: `utime + stime` of the server process over
 * the measured run (µs) ÷ the responses wrk counted in it.
 * @returns `undefined` without CPU times or without a response.
 */
export function cpuPerRequest(cpu: CpuTimes | undefined, responses: number | undefined): CpuPerRequest | undefined {
  if (cpu === undefined || responses === undefined || responses <= 0) return undefined
  const us = (seconds: number) => (seconds * 1e6) / responses
  return { user: us(cpu.user), system: us(cpu.system), total: us(cpu.user + cpu.system) }
}

/** `a ÷ b`, or `undefined` when either is missing or `b` is not positive. */
export function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b <= 0 ? undefined : a / b
}

/** 2xx responses of a run. */
export function okResponses(load: LoadSummary): number {
  return Object.entries(load.statuses).reduce((sum, [status, count]) => sum + (status.startsWith('2') ? count : 0), 0)
}

/**
 * Everything that went wrong in a run: socket errors and timeouts, non-2xx, 2xx with
 * a wrong body, and 200s whose plant is not stored (durable targets, when counted).
 */
export function faults(result: TargetResult): number | undefined {
  const load = result.load
  if (load === undefined) return undefined
  const unstored = result.storedRows === undefined ? 0 : Math.max(0, okResponses(load) - result.storedRows)
  return load.errors + load.non2xx + load.wrongBodies + unstored
}

/** The durable ceiling each service target is held to. */
export const DURABLE_CEILING = { embedded: 'durable', postgres: 'durable-pg' } as const satisfies Partial<Record<TargetKey, TargetKey>>

/** One figure with a target: what, the threshold in words, and how to measure and judge it. */
interface Goal {
  readonly figure: string
  readonly threshold: string
  readonly measure: (result: TargetResult, results: readonly TargetResult[]) => number | undefined
  readonly met: (value: number) => boolean
  readonly format: (value: number) => string
}

const byKey = (results: readonly TargetResult[], key: TargetKey) => results.find((result) => result.key === key)
const number = (value: number, digits = 0): string =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const ms = (value: number): string => number(value, value >= 100 ? 0 : 2)

/** The targets of the service, each checked on the embedded store and on PostgreSQL. */
export const GOALS: readonly Goal[] = [
  {
    figure: "server CPU per durable create ÷ raw ceiling's CPU per request",
    threshold: '≤ 1.25',
    measure: (result, results) => {
      const ceiling = byKey(results, 'raw')
      return ratio(cpuPerRequest(result.cpu, result.load?.responses)?.total, cpuPerRequest(ceiling?.cpu, ceiling?.load?.responses)?.total)
    },
    met: (value) => value <= 1.25,
    format: (value) => number(value, 2),
  },
  {
    figure: 'req/s ÷ durable ceiling (embedded: SQLite durable ceiling; PostgreSQL: PostgreSQL durable ceiling)',
    threshold: '≥ 0.85',
    measure: (result, results) => {
      const key = result.key === 'embedded' || result.key === 'postgres' ? DURABLE_CEILING[result.key] : undefined
      return key === undefined ? undefined : ratio(result.load?.requestsPerSecond, byKey(results, key)?.load?.requestsPerSecond)
    },
    met: (value) => value >= 0.85,
    format: (value) => number(value, 2),
  },
  { figure: 'p99 latency, ms', threshold: '< 6 ms', measure: (result) => result.load?.latencyMs.p99, met: (value) => value < 6, format: ms },
  { figure: 'ready on existing data (spawn → first 200), ms', threshold: '< 300 ms', measure: (result) => result.readyMs, met: (value) => value < 300, format: ms },
  { figure: 'peak RSS, MB', threshold: '< 100 MB', measure: (result) => result.peakRssMb, met: (value) => value < 100, format: (value) => number(value, 1) },
  { figure: 'errors, non-2xx, wrong bodies, 200s not stored', threshold: '0', measure: faults, met: (value) => value === 0, format: (value) => String(value) },
]

/** The service targets the goals are checked on. */
export const CHECKED = ['embedded', 'postgres'] as const satisfies readonly TargetKey[]

/** One verdict: the measured value (formatted) and whether it meets the goal; `undefined` when not measured. */
export interface Verdict {
  readonly measured: string
  readonly met: boolean | undefined
}

/** The verdict of `goal` for the target `key`. */
export function verdict(goal: Goal, key: (typeof CHECKED)[number], results: readonly TargetResult[]): Verdict {
  const result = byKey(results, key)
  const value = result?.load === undefined ? undefined : goal.measure(result, results)
  return value === undefined || Number.isNaN(value) ? { measured: 'n/a', met: undefined } : { measured: goal.format(value), met: goal.met(value) }
}

function osName(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

/** The machine, as a Markdown table. */
function machineSection(date: Date, loadAverage: RunSettings['loadAverage'], stolen: RunSettings['stolen']): string {
  return [
    '| | |',
    '|---|---|',
    `| CPU | ${cpus()[0]?.model ?? 'unknown'} |`,
    `| cores | ${cpus().length} |`,
    `| memory | ${number(totalmem() / 2 ** 30, 1)} GiB |`,
    `| Node | ${process.version} |`,
    `| OS | ${osName()}, Linux ${release()} |`,
    `| date | ${date.toISOString()} |`,
    `| load average (1 min), start → end of the targets | ${number(loadAverage[0], 2)} → ${number(loadAverage[1], 2)} |`,
    `| CPU time stolen by the hypervisor over the targets (\`/proc/stat\` steal) | ${stolen === undefined ? 'unknown' : stolen.map((share, cpu) => `CPU ${cpu}: ${number(share * 100, 1)} %`).join(', ')} |`,
  ].join('\n')
}

function instructionsCell(instructions: Instructions | undefined): string {
  if (instructions === undefined) return 'n/a'
  const value = number(instructions.perRequest)
  return instructions.range === undefined ? value : `${value} (rounds ${number(instructions.range[0])}–${number(instructions.range[1])}, ${number(instructions.responses ?? 0)} requests)`
}

function resultRow(result: TargetResult): string {
  const load = result.load
  if (load === undefined) return `| ${result.title} | not run: ${result.notRun ?? 'unknown'} |${' |'.repeat(7)}`
  const other = Object.entries(load.statuses).filter(([status]) => !status.startsWith('2'))
  const detail = other.length === 0 ? '' : ` (${other.map(([status, count]) => `${status}: ${count}`).join(', ')})`
  const cpu = cpuPerRequest(result.cpu, load.responses)
  const stored = result.storedRows === undefined ? '' : ` / ${number(Math.max(0, okResponses(load) - result.storedRows))}`
  const mb = (value: number | undefined) => (value === undefined ? 'n/a' : number(value, 1))
  return (
    `| ${result.title} | ${number(load.requestsPerSecond)} | ${ms(load.latencyMs.p50)} / ${ms(load.latencyMs.p99)} / ${ms(load.latencyMs.max)} | ` +
    `${load.errors} / ${load.non2xx}${detail} / ${load.wrongBodies}${stored} | ` +
    `${cpu === undefined ? 'n/a' : `${number(cpu.total, 1)} (${number(cpu.user, 1)} + ${number(cpu.system, 1)})`} | ${instructionsCell(result.instructions)} | ` +
    `${mb(result.readyRssMb)} → ${mb(result.peakRssMb)} | ${result.readyMs === undefined ? 'n/a' : ms(result.readyMs)} | ${number(load.generatorCpuPercent)} |`
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
    "Store transactions of the service during the measured run (group commit; from its own `/metrics`):",
    '',
    '| target | transactions | per second | plants per transaction | ms per transaction |',
    '|---|---:|---:|---:|---:|',
    ...rows,
    '',
  ]
}

function goalsSection(results: readonly TargetResult[]): string[] {
  const titles = CHECKED.map((key) => byKey(results, key)?.title ?? key)
  const cell = (v: Verdict) => (v.met === undefined ? 'not measured' : `${v.measured}: ${v.met ? 'met' : '**not met**'}`)
  const instructions = CHECKED.map((key) => {
    const service = byKey(results, key)?.instructions
    const ceiling = byKey(results, 'raw')?.instructions
    const value = ratio(service?.perRequest, ceiling?.perRequest)
    return value === undefined ? 'n/a' : number(value, 2)
  })
  return [
    `| figure | target | ${titles.join(' | ')} |`,
    `|---|---|${CHECKED.map(() => '---:').join('|')}|`,
    ...GOALS.map((goal) => `| ${goal.figure} | ${goal.threshold} | ${CHECKED.map((key) => cell(verdict(goal, key, results))).join(' | ')} |`),
    `| (no target) instructions per durable create ÷ raw ceiling's | — | ${instructions.join(' | ')} |`,
    '',
  ]
}

/** Renders the generated part of the report (everything above the soak section). */
export function renderResults(date: Date, settings: RunSettings, results: readonly TargetResult[]): string {
  const saturated = results.filter((result) => (result.load?.generatorCpuPercent ?? 0) >= 90)
  return [
    '# Benchmarks',
    '',
    `<!-- Generated by \`npm run bench\` (bench/run.ts) on ${date.toISOString()}. Edit only below the hand-written marker. -->`,
    '',
    '`POST /plants` under the same load against three ceilings (raw `node:http`: nothing',
    'stored; committing each plant to SQLite; committing to PostgreSQL), the design floor',
    '(Fastify and fastify-openapi-glue on the contract, nothing else), the service with its',
    'database write skipped, and the service on each store. CPU time and instructions per',
    'request are the server process’s own; throughput and latency depend on the machine.',
    '',
    '## Machine',
    '',
    machineSection(date, settings.loadAverage, settings.stolen),
    '',
    '## Settings',
    '',
    `- Load: wrk (\`bench/post-plants.lua\`), \`POST /plants\`, ${settings.connections} connections, one thread, no pipelining, ` +
      `${settings.warmupS} s warm-up then ${settings.durationS} s measured per target.`,
    `- Every request carries a new id (never repeated across connections, warm-ups and targets; this run's from ${settings.idBase}, above 2^53), a valid bearer token and \`content-type: application/json\`; a 2xx must carry exactly the Plant.`,
    `- Pinning: ${settings.pinning}.`,
    '- Before each target, `sync`: the disk writes earlier targets left in the page cache are flushed then, not during a later target’s fsyncs.',
    '- Server CPU per request: `utime + stime` of the server process (all its threads, `/proc/<pid>/stat`) over the measured run ÷ the responses wrk counted; user + system in brackets. System time includes the kernel\'s loopback TCP work that runs while the server is on the CPU (delivering its responses into wrk\'s sockets); the delivery of requests is charged to wrk. PostgreSQL\'s own processes are not counted.',
    `- Instructions per request: ${settings.instructions}.`,
    `- CPU profiler: ${settings.profiled ? '**on** (`node --cpu-prof`): the service figures are lower than in a plain run' : 'off'}.`,
    `- Service measured: ${settings.revision}; \`dist/service/server.js\` with \`NODE_ENV=production\`, \`LOG_LEVEL=warn\`, \`RATE_LIMIT_MAX=1000000000\` (the per-token limit runs on every request but never trips), a fresh temporary \`DATA_DIR\`; PostgreSQL targets with \`DATABASE_URL=${settings.databaseUrl}\` (their rows are deleted afterwards, by id range).`,
    '- Ready: a second start of the target on the data the run left: spawn → first `POST /plants` answered 200 (probed every 5 ms). RSS: `VmRSS` right after the first start became ready, and the peak (`VmHWM`) after the run.',
    '- Errors / non-2xx / wrong bodies [/ 200s not stored]: the last is 2xx answers minus the rows stored with the measured run\'s ids, for the targets that store.',
    '',
    '## Results',
    '',
    '| target | req/s | latency ms p50 / p99 / max | errors / non-2xx / wrong bodies [/ not stored] | server CPU µs per request (user + sys) | instructions per request | RSS MB ready → peak | ready ms | wrk CPU % |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(resultRow),
    '',
    ...saturated.map((result) => `wrk saturated its core against ${result.title}: that req/s is a lower bound of what the server can do.\n`),
    ...storeSection(results, settings.durationS),
    '## Targets',
    '',
    ...goalsSection(results),
  ].join('\n')
}

const FINDINGS_PLACEHOLDER = `${HAND_WRITTEN}

## Findings

Not written yet.
`

/**
 * Writes the report: the generated part, then the soak section (this run's, or the
 * previous one kept), then the hand-written part kept from the previous report.
 * @param soak - this run's soak section (without delimiters), or `undefined` when none ran.
 */
export function writeReport(path: string, generated: string, soak: string | undefined): void {
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : ''
  const handIndex = previous.indexOf(HAND_WRITTEN)
  const handWritten = handIndex === -1 ? FINDINGS_PLACEHOLDER : previous.slice(handIndex)
  const start = previous.indexOf(SOAK_START)
  const end = previous.indexOf(SOAK_END)
  const keptSoak = start !== -1 && end > start ? previous.slice(start + SOAK_START.length, end).trim() : undefined
  const soakBody = soak ?? keptSoak ?? 'No soak run yet: `BENCH_SOAK=300 npm run bench` runs one (seconds of steady load).'
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, `${generated}\n## Soak\n\n${SOAK_START}\n${soakBody.trim()}\n${SOAK_END}\n\n${handWritten.trimEnd()}\n`)
}
