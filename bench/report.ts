/**
 * The benchmark's report, `docs/benchmarks.md`: machine, settings, results (each
 * target's median round), the spread over the rounds, the figures the targets are
 * about and their verdicts, taken round by round. Regenerating it keeps two
 * parts: the soak section when no soak ran this time (between {@link SOAK_START}
 * and {@link SOAK_END}), and everything from {@link HAND_WRITTEN} on (how to run
 * it, what it measures and the decisions it led to, written by hand).
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
  /** p99 latency of the warm-up (the first `warmupS` s of load after the start), ms; none without a warm-up. */
  readonly warmupP99Ms?: number | undefined
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
  /** Node's options of the service processes: those of the image's command. */
  readonly serviceNodeOptions: readonly string[]
  /** `NAME=value` settings of the image's environment the service runs with besides its own (`MALLOC_ARENA_MAX=1`). */
  readonly serviceEnvironment: readonly string[]
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

/** Every round's results, in the order the rounds ran; each round's in {@link TARGET_KEYS} order. */
export type Rounds = readonly (readonly TargetResult[])[]

/** The median of some figures, with the lowest and the highest. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

/**
 * Median and range of `values`; of an even count, the median is the mean of the two
 * middle values.
 * @returns `undefined` for no values.
 */
export function spread(values: readonly number[]): Spread | undefined {
  if (values.length === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  const median = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  return { median, min: sorted[0]!, max: sorted.at(-1)! }
}

const byKey = (results: readonly TargetResult[], key: TargetKey) => results.find((result) => result.key === key)
const cpuTotal = (result: TargetResult | undefined) => cpuPerRequest(result?.cpu, result?.load?.responses)?.total
const difference = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a - b)

/** One target's result in each round (`undefined` where a round lacks it), in round order. */
const ofTarget = (rounds: Rounds, key: TargetKey) => rounds.map((round) => byKey(round, key))

/**
 * The round shown for a target: the one whose server CPU per request is the median of
 * the target's rounds; of an even count, the lower of the two middle ones (a round
 * that ran, not a mean of two). Without any CPU figure, the first round measured.
 * @param results - the target's result in each round, in round order.
 * @returns that result and its round, counted from 1; `undefined` when no round measured the target.
 */
export function medianRound(results: readonly (TargetResult | undefined)[]): { result: TargetResult; round: number } | undefined {
  const measured = results.flatMap((result, index) => (result?.load === undefined ? [] : [{ result, round: index + 1, cpu: cpuTotal(result) }]))
  const withCpu = measured.filter((each) => each.cpu !== undefined).sort((a, b) => a.cpu! - b.cpu!)
  const chosen = withCpu.length === 0 ? measured[0] : withCpu[(withCpu.length - 1) >> 1]
  return chosen === undefined ? undefined : { result: chosen.result, round: chosen.round }
}

/**
 * One figure with a target: what, the threshold in words, how to measure one round
 * and how to judge the rounds.
 */
interface Goal {
  readonly figure: string
  readonly threshold: string
  /** The figure of one round: the service's result in it, judged against the other targets of that same round. */
  readonly measure: (result: TargetResult, round: readonly TargetResult[]) => number | undefined
  /** Judge the sum of the rounds' figures, not their median. */
  readonly sum?: boolean
  readonly met: (value: number) => boolean
  readonly format: (value: number) => string
}

const number = (value: number, digits = 0): string =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const ms = (value: number): string => number(value, value >= 100 ? 0 : 2)
const twoDigits = (value: number): string => number(value, 2)

/** The targets of the service, each checked on the embedded store and on PostgreSQL, round by round. */
export const GOALS: readonly Goal[] = [
  {
    figure: "server CPU per durable create ÷ design floor's",
    threshold: '≤ 1.15',
    measure: (result, round) => ratio(cpuTotal(result), cpuTotal(byKey(round, 'floor'))),
    met: (value) => value <= 1.15,
    format: twoDigits,
  },
  {
    figure: "p99 latency ÷ design floor's p99",
    threshold: '≤ 1.5',
    measure: (result, round) => ratio(result.load?.latencyMs.p99, byKey(round, 'floor')?.load?.latencyMs.p99),
    met: (value) => value <= 1.5,
    format: twoDigits,
  },
  {
    figure: "peak RSS − design floor's peak RSS, MB",
    threshold: '≤ 20 MB',
    measure: (result, round) => difference(result.peakRssMb, byKey(round, 'floor')?.peakRssMb),
    met: (value) => value <= 20,
    format: (value) => number(value, 1),
  },
  {
    figure: "ready on existing data (spawn → first 200) ÷ raw ceiling's ready",
    threshold: '≤ 4',
    measure: (result, round) => ratio(result.readyMs, byKey(round, 'raw')?.readyMs),
    met: (value) => value <= 4,
    format: twoDigits,
  },
  {
    figure: "ready on existing data − design floor's ready, ms",
    threshold: '≤ 100 ms',
    measure: (result, round) => difference(result.readyMs, byKey(round, 'floor')?.readyMs),
    met: (value) => value <= 100,
    format: (value) => number(value),
  },
  { figure: 'errors, non-2xx, wrong bodies, 200s not stored', threshold: '0', measure: faults, sum: true, met: (value) => value === 0, format: String },
]

/** The service targets the goals are checked on. */
export const CHECKED = ['embedded', 'postgres'] as const satisfies readonly TargetKey[]

/** One verdict: the measured value (formatted) and whether it meets the goal; `undefined` when not measured. */
export interface Verdict {
  readonly measured: string
  readonly met: boolean | undefined
}

/** `measure` of `key`'s result in each round that measured it and gave a figure. */
function perRound(rounds: Rounds, key: TargetKey, measure: Goal['measure']): number[] {
  return rounds.flatMap((round) => {
    const result = byKey(round, key)
    const value = result?.load === undefined ? undefined : measure(result, round)
    return value === undefined || Number.isNaN(value) ? [] : [value]
  })
}

/** `median (min–max)`, each formatted, with `note` after the range when given. */
const spreadText = (figures: Spread, format: (value: number) => string, note?: string) =>
  `${format(figures.median)} (${format(figures.min)}–${format(figures.max)}${note === undefined ? '' : `; ${note}`})`

/** `k of n rounds` when fewer than all `rounds` gave a figure. */
const partial = (count: number, rounds: Rounds) => (count < rounds.length ? `${count} of ${rounds.length} rounds` : undefined)

/**
 * The verdict of `goal` for the target `key`: its figure in each round (against the
 * floor and ceiling of the same round), then the median of those, with their range,
 * judged; a `sum` goal judges their sum. A round without the service or what it is
 * compared with gives no figure.
 * @returns `measured` like `1.12 (1.05–1.30)`, `0` for a sum, with `; 3 of 5 rounds`
 *   (or ` (3 of 5 rounds)`) when some rounds gave none; `n/a` and `met: undefined` when none did.
 */
export function verdict(goal: Goal, key: (typeof CHECKED)[number], rounds: Rounds): Verdict {
  const values = perRound(rounds, key, goal.measure)
  const figures = spread(values)
  if (figures === undefined) return { measured: 'n/a', met: undefined }
  const some = partial(values.length, rounds)
  if (goal.sum === true) {
    const total = values.reduce((sum, value) => sum + value, 0)
    return { measured: `${goal.format(total)}${some === undefined ? '' : ` (${some})`}`, met: goal.met(total) }
  }
  return { measured: spreadText(figures, goal.format, some), met: goal.met(figures.median) }
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
  return instructions.range === undefined ? value : `${value} (callgrind rounds ${number(instructions.range[0])}–${number(instructions.range[1])}, ${number(instructions.responses ?? 0)} requests)`
}

/** One row of the Results table: `result`, measured in `round`. */
function resultRow(result: TargetResult, round: number): string {
  const load = result.load!
  const other = Object.entries(load.statuses).filter(([status]) => !status.startsWith('2'))
  const detail = other.length === 0 ? '' : ` (${other.map(([status, count]) => `${status}: ${count}`).join(', ')})`
  const cpu = cpuPerRequest(result.cpu, load.responses)
  const stored = result.storedRows === undefined ? '' : ` / ${number(Math.max(0, okResponses(load) - result.storedRows))}`
  const mb = (value: number | undefined) => (value === undefined ? 'n/a' : number(value, 1))
  return (
    `| ${result.title} | ${round} | ${number(load.requestsPerSecond)} | ${ms(load.latencyMs.p50)} / ${ms(load.latencyMs.p99)} / ${ms(load.latencyMs.max)} | ` +
    `${load.errors} / ${load.non2xx}${detail} / ${load.wrongBodies}${stored} | ` +
    `${cpu === undefined ? 'n/a' : `${number(cpu.total, 1)} (${number(cpu.user, 1)} + ${number(cpu.system, 1)})`} | ${instructionsCell(result.instructions)} | ` +
    `${mb(result.readyRssMb)} → ${mb(result.peakRssMb)} | ${result.readyMs === undefined ? 'n/a' : ms(result.readyMs)} | ${number(load.generatorCpuPercent)} |`
  )
}

/** The Results table: each target's median round (`medianRound`), or why it was not run. */
function resultsSection(rounds: Rounds): string[] {
  const rows = TARGET_KEYS.flatMap((key) => {
    const results = ofTarget(rounds, key)
    const shown = medianRound(results)
    if (shown !== undefined) return [resultRow(shown.result, shown.round)]
    const first = results.find((result) => result !== undefined)
    return first === undefined ? [] : [`| ${first.title} | not run: ${first.notRun ?? 'unknown'} |${' |'.repeat(8)}`]
  })
  return [
    `One row per target: the round whose server CPU per request is the median of that target's rounds (of an even number, the lower of the two middle ones); the Rounds table below gives the median and range of each figure over all rounds.`,
    '',
    '| target | round | req/s | latency ms p50 / p99 / max | errors / non-2xx / wrong bodies [/ not stored] | server CPU µs per request (user + sys) | instructions per request | RSS MB ready → peak | ready ms | wrk CPU % |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ]
}

/** Figures of the Rounds table: what is read from one round's result, and how it is shown (one precision per column). */
const ROUND_FIGURES: readonly { readonly heading: string; readonly of: (result: TargetResult) => number | undefined; readonly format: (value: number) => string }[] = [
  { heading: 'server CPU µs per request', of: cpuTotal, format: (value) => number(value, 1) },
  { heading: 'p99 ms', of: (result) => result.load?.latencyMs.p99, format: (value) => number(value, 1) },
  { heading: 'warm-up p99 ms', of: (result) => result.warmupP99Ms, format: (value) => number(value, 1) },
  { heading: 'peak RSS MB', of: (result) => result.peakRssMb, format: (value) => number(value, 1) },
  { heading: 'ready ms', of: (result) => result.readyMs, format: (value) => number(value) },
  { heading: 'req/s', of: (result) => result.load?.requestsPerSecond, format: (value) => number(value) },
]

/** The Rounds table: median and range of each target's figures over the rounds that measured it. */
function roundsSection(rounds: Rounds): string[] {
  const rows = TARGET_KEYS.flatMap((key) => {
    const measured = ofTarget(rounds, key).filter((result) => result?.load !== undefined)
    if (measured.length === 0) return []
    const cells = ROUND_FIGURES.map(({ of, format }) => {
      const figures = spread(perRound(rounds, key, of))
      return figures === undefined ? 'n/a' : spreadText(figures, format)
    })
    return [`| ${measured[0]!.title} | ${measured.length} of ${rounds.length} | ${cells.join(' | ')} |`]
  })
  if (rows.length === 0) return []
  return [
    '## Rounds',
    '',
    'Each figure over the rounds that measured the target: median (lowest–highest); of an even number of rounds, the median is the mean of the two middle ones.',
    '',
    `| target | rounds measured | ${ROUND_FIGURES.map((figure) => figure.heading).join(' | ')} |`,
    `|---|---:|${ROUND_FIGURES.map(() => '---:').join('|')}|`,
    ...rows,
    '',
  ]
}

/** Targets whose wrk saturated its core in some rounds: their req/s there is a lower bound. */
function saturatedNotes(rounds: Rounds): string[] {
  return TARGET_KEYS.flatMap((key) => {
    const saturated = ofTarget(rounds, key).filter((result) => (result?.load?.generatorCpuPercent ?? 0) >= 90)
    return saturated.length === 0
      ? []
      : [`wrk saturated its core against ${saturated[0]!.title} in ${saturated.length} of ${rounds.length} rounds: there, that req/s is a lower bound of what the server can do.\n`]
  })
}

/** Group-commit activity of the service targets in their median round, read from their `/metrics`. */
function storeSection(shown: readonly TargetResult[], durationS: number): string[] {
  const rows = shown.flatMap((result) =>
    result.store === undefined || result.key === 'unstored'
      ? []
      : [`| ${result.title} | ${number(result.store.transactions)} | ${number(result.store.transactions / durationS)} | ${number(result.store.meanBatch, 1)} | ${ms(result.store.meanTransactionMs)} |`],
  )
  if (rows.length === 0) return []
  return [
    "Store transactions of the service during the measured run of the round shown above (group commit; from its own `/metrics`):",
    '',
    '| target | transactions | per second | plants per transaction | ms per transaction |',
    '|---|---:|---:|---:|---:|',
    ...rows,
    '',
  ]
}

function goalsSection(rounds: Rounds): string[] {
  const titles = CHECKED.map((key) => ofTarget(rounds, key).find((result) => result !== undefined)?.title ?? key)
  const cell = (v: Verdict) => (v.met === undefined ? 'not measured' : `${v.measured}: ${v.met ? 'met' : '**not met**'}`)
  const againstFloor = (of: (result: TargetResult | undefined) => number | undefined) =>
    CHECKED.map((key) => {
      const figures = spread(perRound(rounds, key, (result, round) => ratio(of(result), of(byKey(round, 'floor')))))
      return figures === undefined ? 'n/a' : spreadText(figures, twoDigits)
    })
  return [
    'Each figure is taken in every round, the service against the design floor or raw ceiling of that same round; shown is the median over the rounds (lowest–highest), and the verdict judges the median. The error count is the sum over all rounds. A round without the service or what it is compared with gives no figure.',
    '',
    `| figure | target | ${titles.join(' | ')} |`,
    `|---|---|${CHECKED.map(() => '---:').join('|')}|`,
    ...GOALS.map((goal) => `| ${goal.figure} | ${goal.threshold} | ${CHECKED.map((key) => cell(verdict(goal, key, rounds))).join(' | ')} |`),
    `| (no target) p99 latency in the warm-up (the first seconds of load after a start) ÷ design floor's | — | ${againstFloor((result) => result?.warmupP99Ms).join(' | ')} |`,
    `| (no target) instructions per durable create ÷ design floor's | — | ${againstFloor((result) => result?.instructions?.perRequest).join(' | ')} |`,
    '',
  ]
}

/**
 * Renders the generated part of the report (everything above the soak section).
 * @param rounds - every round's results; at least one round.
 */
export function renderResults(date: Date, settings: RunSettings, rounds: Rounds): string {
  const shown = TARGET_KEYS.flatMap((key) => medianRound(ofTarget(rounds, key))?.result ?? [])
  return [
    '# Benchmarks',
    '',
    `<!-- Generated by \`npm run bench\` (bench/run.ts) on ${date.toISOString()}. Edit only below the hand-written marker. -->`,
    '',
    '`POST /plants` under the same load against three ceilings (raw `node:http`: nothing',
    'stored; committing each plant to SQLite; committing to PostgreSQL), the design floor',
    '(Fastify and fastify-openapi-glue on the contract, nothing else), the service with its',
    'database write skipped, and the service on each store, in interleaved rounds. CPU time',
    'and instructions per request are the server process’s own; throughput and latency',
    'depend on the machine.',
    '',
    '## Machine',
    '',
    machineSection(date, settings.loadAverage, settings.stolen),
    '',
    '## Settings',
    '',
    `- Load: wrk (\`bench/post-plants.lua\`), \`POST /plants\`, ${settings.connections} connections, one thread, no pipelining, ` +
      `${settings.warmupS} s warm-up then ${settings.durationS} s measured per target and round.`,
    `- Rounds: ${rounds.length}, interleaved: each round runs every target once, in the order of the tables below, so the design floor and the service alternate within the run rather than following one another.`,
    `- Every request carries a new id (never repeated across connections, warm-ups, targets and rounds; this run's from ${settings.idBase}, above 2^53), a valid bearer token and \`content-type: application/json\`; a 2xx must carry exactly the Plant.`,
    `- Pinning: ${settings.pinning}.`,
    '- Before each target, `sync`: the disk writes earlier targets left in the page cache are flushed then, not during a later target’s fsyncs.',
    '- Server CPU per request: `utime + stime` of the server process (all its threads, `/proc/<pid>/stat`) over the measured run ÷ the responses wrk counted; user + system in brackets. System time includes the kernel\'s loopback TCP work that runs while the server is on the CPU (delivering its responses into wrk\'s sockets); the delivery of requests is charged to wrk. PostgreSQL\'s own processes are not counted.',
    `- Instructions per request: ${settings.instructions}.`,
    `- CPU profiler: ${settings.profiled ? '**on** (`node --cpu-prof` of the service, or `perf record` of every target): their figures are lower than in a plain run' : 'off'}.`,
    `- Service measured: ${settings.revision}; \`${[...settings.serviceEnvironment, 'node', ...settings.serviceNodeOptions, 'dist/service/server.js'].join(' ')}\` (the image's command) as it ships: \`NODE_ENV=production\`, the default log level (\`info\`: Fastify's request log lines, written to a pipe this script reads), \`RATE_LIMIT_MAX=1000000000\` (the per-token limit runs on every request but never trips), a fresh temporary \`DATA_DIR\` per target and round; PostgreSQL targets with \`DATABASE_URL=${settings.databaseUrl}\` (their rows are deleted afterwards, by id range).`,
    '- Ready: a second start of the target on the data the run left: spawn → first `POST /plants` answered 200 (probed every 5 ms). RSS: `VmRSS` right after the first start became ready, and the peak (`VmHWM`) after the run.',
    '- Errors / non-2xx / wrong bodies [/ 200s not stored]: the last is 2xx answers minus the rows stored with the measured run\'s ids, for the targets that store.',
    '',
    '## Results',
    '',
    ...resultsSection(rounds),
    ...saturatedNotes(rounds),
    ...storeSection(shown, settings.durationS),
    ...roundsSection(rounds),
    '## Targets',
    '',
    ...goalsSection(rounds),
  ].join('\n')
}

const FINDINGS_PLACEHOLDER = `${HAND_WRITTEN}

## What it measures, and why

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
