/**
 * The benchmark's report, `docs/benchmarks.md`: machine, settings, results (each
 * target's median round), the spread over the rounds, the service against the design
 * floor and the raw ceiling (plain figures, no targets), the correctness check, and,
 * with a baseline, the A/B comparison of the working tree with it and its verdicts;
 * every comparison taken within a round. Regenerating it keeps two parts: the soak section when no soak ran this time (between {@link SOAK_START}
 * and {@link SOAK_END}), and everything from {@link HAND_WRITTEN} on (how to run
 * it, what it measures and the decisions it led to, written by hand).
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, release, totalmem } from 'node:os'
import { dirname } from 'node:path'
import type { LoadSummary } from './load.ts'
import type { StoreActivity } from './metrics.ts'
import type { CpuTimes } from './process.ts'

/** Marks the start of the hand-written part; it and everything below it are kept. */
export const HAND_WRITTEN =
  '<!-- Hand-written below this line: `npm run bench` keeps it when it regenerates the report. -->'
/** Soak section delimiters: kept as they are when a run has no soak. */
export const SOAK_START = '<!-- soak:start -->'
/** End marker of the soak section, which a run without a soak keeps as it is. */
export const SOAK_END = '<!-- soak:end -->'

/**
 * The targets, in the order they run: the ceiling (raw `node:http`, nothing
 * stored), the two durable ceilings (raw `node:http` committing to SQLite, to
 * PostgreSQL), the design floor (Fastify and fastify-openapi-glue on the contract,
 * nothing else), the service with its write skipped (an ablation), the service
 * on each store (`baseline`: the service of a git ref, on the embedded store, for an
 * A/B run), and the service on the embedded store with every create traced.
 */
export const TARGET_KEYS = [
  'raw',
  'durable',
  'durable-pg',
  'floor',
  'unstored',
  'embedded',
  'baseline',
  'postgres',
  'traced',
] as const
export type TargetKey = (typeof TARGET_KEYS)[number]

/** The targets run without `BENCH_TARGETS`: all but `baseline`, which runs only with `BENCH_BASELINE_REF`. */
export const DEFAULT_TARGETS: readonly TargetKey[] = TARGET_KEYS.filter((key) => key !== 'baseline')

/**
 * The targets of one round, in the order they run: {@link TARGET_KEYS} order, but the
 * working tree's service and the baseline swap places in every even round, so
 * neither always runs right after the other.
 * @param round - counted from 1.
 */
export function roundOrder(round: number, selected: ReadonlySet<TargetKey>): TargetKey[] {
  const order = TARGET_KEYS.filter((key) => selected.has(key))
  const [tree, baseline] = [order.indexOf('embedded'), order.indexOf('baseline')]
  if (round % 2 === 0 && tree !== -1 && baseline !== -1)
    [order[tree], order[baseline]] = [order[baseline]!, order[tree]!]
  return order
}

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
  /** How the server process ended while it was measured, unasked (`code 1: …` with the end of its output). */
  readonly exited?: string
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
  /** `NAME=value` runtime settings of the image's environment the service runs with besides its own (`MALLOC_ARENA_MAX=1`, `NODE_COMPILE_CACHE=…`). */
  readonly serviceEnvironment: readonly string[]
  /** Whether the service processes ran under `node --cpu-prof` (slower). */
  readonly profiled: boolean
  /** 1-minute load average of the machine when the run started and ended (others' work shows here). */
  readonly loadAverage: readonly [start: number, end: number]
  /** How instructions were counted, in words (or why not). */
  readonly instructions: string
  /** Share of each CPU's time the hypervisor gave to others over the targets (`stolenShares`), when known. */
  readonly stolen?: readonly number[] | undefined
  /** Wall time of the rounds, seconds. */
  readonly roundsSeconds?: number
  /** The A/B run's baseline: the ref, and how it was checked out, installed, built and started, in words. */
  readonly baseline?: { readonly ref: string; readonly how: string } | undefined
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
 * a wrong body, 200s whose plant is not stored (durable targets, when counted), and
 * the server process exiting unasked (one).
 */
export function faults(result: TargetResult): number | undefined {
  const load = result.load
  if (load === undefined) return undefined
  const unstored = result.storedRows === undefined ? 0 : Math.max(0, okResponses(load) - result.storedRows)
  return load.errors + load.non2xx + load.wrongBodies + unstored + (result.exited === undefined ? 0 : 1)
}

/** Every round's results, in the order the rounds ran; each round's in the order its targets ran. */
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
const difference = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined ? undefined : a - b

/** One target's result in each round (`undefined` where a round lacks it), in round order. */
const ofTarget = (rounds: Rounds, key: TargetKey) => rounds.map((round) => byKey(round, key))

/**
 * The round shown for a target: the one whose server CPU per request is the median of
 * the target's rounds; of an even count, the lower of the two middle ones (a round
 * that ran, not a mean of two). Without any CPU figure, the first round measured.
 * @param results - the target's result in each round, in round order.
 * @returns that result and its round, counted from 1; `undefined` when no round measured the target.
 */
export function medianRound(
  results: readonly (TargetResult | undefined)[],
): { result: TargetResult; round: number } | undefined {
  const measured = results.flatMap((result, index) =>
    result?.load === undefined ? [] : [{ result, round: index + 1, cpu: cpuTotal(result) }],
  )
  const withCpu = measured.filter((each) => each.cpu !== undefined).sort((a, b) => a.cpu! - b.cpu!)
  const chosen = withCpu.length === 0 ? measured[0] : withCpu[(withCpu.length - 1) >> 1]
  return chosen === undefined ? undefined : { result: chosen.result, round: chosen.round }
}

const number = (value: number, digits = 0): string =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const ms = (value: number): string => number(value, value >= 100 ? 0 : 2)
const twoDigits = (value: number): string => number(value, 2)
/** With its sign: `+1.5`, `−3.0`, `0.0`. */
const signed =
  (digits: number) =>
  (value: number): string => {
    const text = number(Math.abs(value), digits)
    return Number(text.replace(/,/g, '')) === 0 ? text : `${value < 0 ? '−' : '+'}${text}`
  }

/** A figure of one round: `result` (a service target) against the other targets of that same round. */
type RoundFigure = (result: TargetResult, round: readonly TargetResult[]) => number | undefined

/** `measure` of `key`'s result in each round that measured it and gave a figure. */
function perRound(rounds: Rounds, key: TargetKey, measure: RoundFigure): number[] {
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
const partial = (count: number, rounds: Rounds) =>
  count < rounds.length ? `${count} of ${rounds.length} rounds` : undefined

/**
 * The figures of the service against the design floor and the raw ceiling: no
 * target, no verdict (the floor targets are retired); each taken within a round.
 */
export const FLOOR_FIGURES: readonly {
  readonly figure: string
  readonly measure: RoundFigure
  readonly format: (value: number) => string
}[] = [
  {
    figure: "server CPU per request ÷ design floor's",
    measure: (result, round) => ratio(cpuTotal(result), cpuTotal(byKey(round, 'floor'))),
    format: twoDigits,
  },
  {
    figure: "server CPU per request ÷ raw ceiling's",
    measure: (result, round) => ratio(cpuTotal(result), cpuTotal(byKey(round, 'raw'))),
    format: twoDigits,
  },
  {
    figure: "p99 latency ÷ design floor's",
    measure: (result, round) => ratio(result.load?.latencyMs.p99, byKey(round, 'floor')?.load?.latencyMs.p99),
    format: twoDigits,
  },
  {
    figure: "p99 latency in the warm-up ÷ design floor's",
    measure: (result, round) => ratio(result.warmupP99Ms, byKey(round, 'floor')?.warmupP99Ms),
    format: twoDigits,
  },
  {
    figure: "peak RSS − design floor's, MB",
    measure: (result, round) => difference(result.peakRssMb, byKey(round, 'floor')?.peakRssMb),
    format: signed(1),
  },
  {
    figure: "ready on existing data ÷ raw ceiling's",
    measure: (result, round) => ratio(result.readyMs, byKey(round, 'raw')?.readyMs),
    format: twoDigits,
  },
  {
    figure: "ready on existing data − design floor's, ms",
    measure: (result, round) => difference(result.readyMs, byKey(round, 'floor')?.readyMs),
    format: signed(0),
  },
  {
    figure: "instructions per request ÷ design floor's",
    measure: (result, round) => ratio(result.instructions?.perRequest, byKey(round, 'floor')?.instructions?.perRequest),
    format: twoDigits,
  },
]

/** The service targets shown against the floor and the ceiling, when measured. */
export const COMPARED = ['embedded', 'baseline', 'postgres'] as const satisfies readonly TargetKey[]

/**
 * One figure of `key` over the rounds: its value in each round (against the floor
 * or ceiling of that same round), then the median and range of those.
 * @returns like `1.12 (1.05–1.30)`, with `; 3 of 5 rounds` when some rounds gave
 *   none; `n/a` when none did.
 */
export function overRounds(
  measure: RoundFigure,
  format: (value: number) => string,
  key: TargetKey,
  rounds: Rounds,
): string {
  const values = perRound(rounds, key, measure)
  const figures = spread(values)
  return figures === undefined ? 'n/a' : spreadText(figures, format, partial(values.length, rounds))
}

/** The correctness check: nothing may go wrong in any target's run. */
export interface Correctness {
  /** Faults summed over every target and round measured. */
  readonly total: number
  /** The targets with faults, and how many. */
  readonly byTarget: readonly { readonly title: string; readonly faults: number }[]
  /** Target runs counted. */
  readonly runs: number
}

/**
 * Errors, non-2xx, wrong bodies and 200s not stored ({@link faults}), summed over
 * every target and round that measured something.
 * @returns `undefined` when nothing was measured.
 */
export function correctness(rounds: Rounds): Correctness | undefined {
  const measured = rounds.flat().filter((result) => result.load !== undefined)
  if (measured.length === 0) return undefined
  const byTarget = TARGET_KEYS.flatMap((key) => {
    const ofKey = measured.filter((result) => result.key === key)
    const count = ofKey.reduce((sum, result) => sum + (faults(result) ?? 0), 0)
    return count === 0 ? [] : [{ title: ofKey[0]!.title, faults: count }]
  })
  return { total: byTarget.reduce((sum, each) => sum + each.faults, 0), byTarget, runs: measured.length }
}

/**
 * One figure of the A/B comparison: the working tree's service (`embedded`) against
 * the baseline's (`baseline`) of the same round, with the threshold a refactor must keep.
 */
export interface AbFigure {
  readonly figure: string
  readonly threshold: string
  readonly measure: (tree: TargetResult, baseline: TargetResult) => number | undefined
  readonly met: (value: number) => boolean
  readonly format: (value: number) => string
}

/** The A/B figures and their thresholds, judged on the median of the rounds. */
export const AB_FIGURES: readonly AbFigure[] = [
  {
    figure: 'server CPU per create, working tree ÷ baseline',
    threshold: '≤ 1.10 ×',
    measure: (a, b) => ratio(cpuTotal(a), cpuTotal(b)),
    met: (value) => value <= 1.1,
    format: twoDigits,
  },
  {
    figure: 'p99 latency, working tree ÷ baseline',
    threshold: '≤ 1.25 ×',
    measure: (a, b) => ratio(a.load?.latencyMs.p99, b.load?.latencyMs.p99),
    met: (value) => value <= 1.25,
    format: twoDigits,
  },
  {
    figure: 'peak RSS, working tree − baseline, MB',
    threshold: '≤ +15 MB',
    measure: (a, b) => difference(a.peakRssMb, b.peakRssMb),
    met: (value) => value <= 15,
    format: signed(1),
  },
  {
    figure: 'ready on existing data, working tree − baseline, ms',
    threshold: '≤ +150 ms',
    measure: (a, b) => difference(a.readyMs, b.readyMs),
    met: (value) => value <= 150,
    format: signed(0),
  },
]

/** One A/B verdict: the figure of each round that ran both, their median and range, and whether the median meets the threshold. */
export interface AbVerdict {
  readonly perRound: readonly (number | undefined)[]
  /** `median (lowest–highest)`, formatted; `n/a` when no round ran both. */
  readonly measured: string
  readonly met: boolean | undefined
}

/**
 * The A/B verdict of `figure`: within each round, the working tree's service against
 * the baseline's of that round; then the median of those, with their range, judged.
 */
export function abVerdict(figure: AbFigure, rounds: Rounds): AbVerdict {
  const perRound = rounds.map((round) => {
    const tree = byKey(round, 'embedded')
    const baseline = byKey(round, 'baseline')
    if (tree?.load === undefined || baseline?.load === undefined) return undefined
    const value = figure.measure(tree, baseline)
    return value === undefined || Number.isNaN(value) ? undefined : value
  })
  const values = perRound.filter((value) => value !== undefined)
  const figures = spread(values)
  if (figures === undefined) return { perRound, measured: 'n/a', met: undefined }
  return {
    perRound,
    measured: spreadText(figures, figure.format, partial(values.length, rounds)),
    met: figure.met(figures.median),
  }
}

function osName(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

/** The machine, as a Markdown table. */
function machineSection(date: Date, settings: RunSettings): string {
  const { loadAverage, stolen, roundsSeconds } = settings
  const minutes = roundsSeconds === undefined ? '' : `; the rounds took ${number(roundsSeconds / 60, 1)} min`
  return [
    '| | |',
    '|---|---|',
    `| CPU | ${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores, ${number(totalmem() / 2 ** 30, 1)} GiB |`,
    `| Node, OS | ${process.version}, ${osName()}, Linux ${release()} |`,
    `| date | ${date.toISOString()}${minutes} |`,
    `| load average (1 min), start → end of the rounds | ${number(loadAverage[0], 2)} → ${number(loadAverage[1], 2)} |`,
    `| CPU time stolen by the hypervisor over the rounds (\`/proc/stat\` steal) | ${stolen === undefined ? 'unknown' : stolen.map((share, cpu) => `CPU ${cpu}: ${number(share * 100, 1)} %`).join(', ')} |`,
  ].join('\n')
}

function instructionsCell(instructions: Instructions | undefined): string {
  if (instructions === undefined) return 'n/a'
  const value = number(instructions.perRequest)
  return instructions.range === undefined
    ? value
    : `${value} (callgrind rounds ${number(instructions.range[0])}–${number(instructions.range[1])}, ${number(instructions.responses ?? 0)} requests)`
}

/** One row of the Results table: `result`, measured in `round`. */
function resultRow(result: TargetResult, round: number): string {
  const load = result.load!
  const other = Object.entries(load.statuses).filter(([status]) => !status.startsWith('2'))
  const detail = other.length === 0 ? '' : ` (${other.map(([status, count]) => `${status}: ${count}`).join(', ')})`
  const cpu = cpuPerRequest(result.cpu, load.responses)
  const stored =
    result.storedRows === undefined ? '' : ` / ${number(Math.max(0, okResponses(load) - result.storedRows))}`
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
const ROUND_FIGURES: readonly {
  readonly heading: string
  readonly of: (result: TargetResult) => number | undefined
  readonly format: (value: number) => string
}[] = [
  { heading: 'server CPU µs per request', of: cpuTotal, format: (value) => number(value, 1) },
  { heading: 'p99 ms', of: (result) => result.load?.latencyMs.p99, format: (value) => number(value, 1) },
  { heading: 'warm-up p99 ms', of: (result) => result.warmupP99Ms, format: (value) => number(value, 1) },
  { heading: 'peak RSS MB', of: (result) => result.peakRssMb, format: (value) => number(value, 1) },
  { heading: 'ready ms', of: (result) => result.readyMs, format: (value) => number(value) },
  { heading: 'req/s', of: (result) => result.load?.requestsPerSecond, format: (value) => number(value) },
  // Group commit's batches during the measured run, from the service's own `/metrics` (not the ablation's: it writes nothing).
  {
    heading: 'plants per store transaction',
    of: (result) => (result.key === 'unstored' ? undefined : result.store?.meanBatch),
    format: (value) => number(value, 1),
  },
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

/** Targets whose wrk saturated its core in some rounds (their req/s there is a lower bound), and servers that exited unasked. */
function runNotes(rounds: Rounds): string[] {
  const exits = TARGET_KEYS.flatMap((key) => {
    const exited = ofTarget(rounds, key).flatMap((result, index) =>
      result?.exited === undefined ? [] : [{ round: index + 1, how: result.exited, title: result.title }],
    )
    return exited.length === 0
      ? []
      : [
          `**${exited[0]!.title} exited unasked** in round ${exited.map((each) => each.round).join(', ')} (a fault below; round ${exited[0]!.round}: ${exited[0]!.how.replace(/\|/g, '\\|')}).\n`,
        ]
  })
  return exits.concat(
    TARGET_KEYS.flatMap((key) => {
      const saturated = ofTarget(rounds, key).filter((result) => (result?.load?.generatorCpuPercent ?? 0) >= 90)
      return saturated.length === 0
        ? []
        : [
            `wrk saturated its core against ${saturated[0]!.title} in ${saturated.length} of ${rounds.length} rounds: there, that req/s is a lower bound of what the server can do.\n`,
          ]
    }),
  )
}

/** Titles of the targets in `keys` that some round measured, with their keys. */
function measuredTargets(rounds: Rounds, keys: readonly TargetKey[]): { key: TargetKey; title: string }[] {
  return keys.flatMap((key) => {
    const result = ofTarget(rounds, key).find((each) => each?.load !== undefined)
    return result === undefined ? [] : [{ key, title: result.title }]
  })
}

/** The service against the design floor and the raw ceiling: plain figures, no targets. */
function floorSection(rounds: Rounds): string[] {
  const columns = measuredTargets(rounds, COMPARED)
  const rows = FLOOR_FIGURES.flatMap(({ figure, measure, format }) => {
    const cells = columns.map(({ key }) => overRounds(measure, format, key, rounds))
    return cells.every((cell) => cell === 'n/a') ? [] : [`| ${figure} | ${cells.join(' | ')} |`]
  })
  if (rows.length === 0) return []
  return [
    '## Against the design floor and the raw ceiling',
    '',
    "Each figure taken within a round (the service against that round's floor or ceiling), then the median over the rounds (lowest–highest); no targets, no verdicts. A figure no round gave (no floor, no instructions) is left out.",
    '',
    `| figure | ${columns.map((column) => column.title).join(' | ')} |`,
    `|---|${columns.map(() => '---:').join('|')}|`,
    ...rows,
    '',
  ]
}

/** The correctness check over every target and round. */
function correctnessSection(rounds: Rounds): string[] {
  const check = correctness(rounds)
  if (check === undefined) return []
  const detail = check.byTarget.map((each) => `${each.title}: ${number(each.faults)}`).join('; ')
  const cell = check.total === 0 ? '0: met' : `${number(check.total)} (${detail}): **not met**`
  return [
    '## Correctness',
    '',
    `Summed over every target and round (${check.runs} runs; a server that exited unasked counts one); not a speed target: any fault is a bug.`,
    '',
    '| check | required | measured |',
    '|---|---|---|',
    `| errors, non-2xx, wrong bodies, 200s not stored | 0 | ${cell} |`,
    '',
  ]
}

/** The A/B comparison: the working tree's service against the baseline's, round by round, with verdicts. */
function abSection(rounds: Rounds, baseline: RunSettings['baseline']): string[] {
  if (measuredTargets(rounds, ['baseline']).length === 0) return []
  const ref = baseline === undefined ? 'the baseline' : `\`${baseline.ref}\``
  const cell = (verdict: AbVerdict) =>
    verdict.met === undefined ? 'not measured' : verdict.met ? 'met' : '**not met**'
  const verdicts = AB_FIGURES.map((figure) => ({ figure, verdict: abVerdict(figure, rounds) }))
  return [
    `## Working tree against ${ref}`,
    '',
    `The working tree's service (\`service, embedded store\`) against the service at ${ref} (\`baseline\`), each figure taken within a round (the two ran back to back, in alternating order), then the median over the rounds (lowest–highest), judged against the threshold; each round's figure after it.`,
    '',
    '| figure | threshold | median (lowest–highest) | rounds 1, 2, … | verdict |',
    '|---|---|---:|---|---|',
    ...verdicts.map(
      ({ figure, verdict }) =>
        `| ${figure.figure} | ${figure.threshold} | ${verdict.measured} | ${verdict.perRound.map((value) => (value === undefined ? '–' : figure.format(value))).join(', ')} | ${cell(verdict)} |`,
    ),
    '',
  ]
}

/**
 * Renders the generated part of the report (everything above the soak section).
 * @param rounds - every round's results; at least one round.
 */
export function renderResults(date: Date, settings: RunSettings, rounds: Rounds): string {
  return [
    '# Benchmarks',
    '',
    `<!-- Generated by \`npm run bench\` (bench/run.ts) on ${date.toISOString()}. Edit only below the hand-written marker. -->`,
    '',
    '`POST /plants` under the same load, in interleaved rounds, against the raw `node:http` ceilings (nothing stored; a',
    'SQLite commit; a PostgreSQL commit), the design floor (Fastify and fastify-openapi-glue on the contract, nothing',
    'else), the service with its write skipped, the service on each store and traced, and, in an A/B run, the service at a git ref.',
    '',
    '## Machine',
    '',
    machineSection(date, settings),
    '',
    '## Settings',
    '',
    `- Load: wrk (\`bench/post-plants.lua\`), \`POST /plants\`, ${settings.connections} connections, one thread, no pipelining, ` +
      `${settings.warmupS} s warm-up then ${settings.durationS} s measured per target and round. Every request carries a new id (this run's from ${settings.idBase}, above 2^53), a valid bearer token and \`content-type: application/json\`; a 2xx must carry exactly the Plant.`,
    `- Rounds: ${rounds.length}, interleaved: each round runs every selected target once, in the order of the tables below${settings.baseline === undefined ? '' : " (the working tree's service and the baseline swap places every other round)"}; before them, one unmeasured start of each target (Node's compile cache and the page cache warm for all alike); \`sync\` before each target, so none pays for an earlier one's dirty pages. Pinning: ${settings.pinning}.`,
    `- Server CPU per request: \`utime + stime\` of the server process (all its threads, \`/proc/<pid>/stat\`) over the measured run ÷ the responses wrk counted; user + system in brackets; it includes the loopback TCP work of delivering its responses; PostgreSQL's own processes are not counted. Instructions per request: ${settings.instructions}.${settings.profiled ? ' CPU profiler **on** (`node --cpu-prof` of the service, or `perf record` of every target): their figures are lower than in a plain run.' : ''}`,
    `- Service measured: ${settings.revision}; \`${[...settings.serviceEnvironment, 'node', ...settings.serviceNodeOptions, 'dist/service/server.js'].join(' ')}\` (the image's command) as it ships: \`NODE_ENV=production\`, the default log level (\`info\`, to a pipe this script reads), \`RATE_LIMIT_MAX=1000000000\` (the per-token limit runs but never trips), a fresh temporary \`DATA_DIR\` per target and round; PostgreSQL targets with \`DATABASE_URL=${settings.databaseUrl}\` (their rows deleted afterwards, by id range).`,
    ...(settings.baseline === undefined
      ? []
      : [
          `- Baseline: \`${settings.baseline.ref}\`, ${settings.baseline.how}; started exactly as the working tree's service (the same command, environment, load and pinning).`,
        ]),
    "- Ready: a second start on the data the run left, spawn → first `POST /plants` answered 200 (probed every 5 ms). RSS: `VmRSS` once ready, and the peak (`VmHWM`) after the run. Not stored: 2xx answers minus the rows stored with the measured run's ids.",
    '',
    '## Results',
    '',
    ...resultsSection(rounds),
    ...runNotes(rounds),
    ...roundsSection(rounds),
    ...abSection(rounds, settings.baseline),
    ...floorSection(rounds),
    ...correctnessSection(rounds),
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
  const soakBody =
    soak ?? keptSoak ?? 'No soak run yet: `BENCH_SOAK=300 npm run bench` runs one (seconds of steady load).'
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(
    path,
    `${generated}\n## Soak\n\n${SOAK_START}\n${soakBody.trim()}\n${SOAK_END}\n\n${handWritten.trimEnd()}\n`,
  )
}
