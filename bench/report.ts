/**
 * The benchmark's report, `docs/benchmarks.md`: each target's figures over the rounds, the A/B against a git ref,
 * the service against the floor and the ceiling, the correctness check; every comparison taken within a round.
 *
 * @module
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, release, totalmem } from 'node:os'
import type { LoadSummary } from './load.ts'
import type { CpuTimes } from './process.ts'

/** Marks the start of the hand-written part; it and everything below it are kept. */
export const HAND_WRITTEN =
  '<!-- Hand-written below this line: `npm run bench` keeps it when it regenerates the report. -->'

/** The targets, in the order each round runs them; `baseline` (the service at a git ref) only in an A/B run. */
export const TARGET_KEYS = ['raw', 'durable', 'durable-pg', 'floor', 'embedded', 'baseline', 'postgres'] as const
export type TargetKey = (typeof TARGET_KEYS)[number]
export const DEFAULT_TARGETS: readonly TargetKey[] = TARGET_KEYS.filter((key) => key !== 'baseline')

/**
 * A round's targets in {@link TARGET_KEYS} order, but the working tree's service and the baseline swap places in
 * every even round, so that neither always runs after the other.
 * @param round - counted from 1.
 */
export function roundOrder(round: number, selected: ReadonlySet<TargetKey>): TargetKey[] {
  const order = TARGET_KEYS.filter((key) => selected.has(key))
  const [tree, baseline] = [order.indexOf('embedded'), order.indexOf('baseline')]
  if (round % 2 === 0 && tree !== -1 && baseline !== -1) [order[tree], order[baseline]] = ['baseline', 'embedded']
  return order
}

/** One target's outcome in one round. */
export interface TargetResult {
  key: TargetKey
  title: string
  notRun?: string
  load?: LoadSummary
  /** Of the server process over the measured run. */
  cpu?: CpuTimes | undefined
  /** VmHWM, MB. */
  peakRssMb?: number | undefined
  /** A second start, on the run's data, to its first 200, ms. */
  readyMs?: number
  /** `nodejs_eventloop_lag_p99_seconds` over the measured run, ms. */
  lagP99Ms?: number | undefined
  meanBatch?: number | undefined
  /** Rows stored with the measured run's ids. */
  storedRows?: number
  /** How it ended unasked while measured. */
  exited?: string
  /** callgrind's count over the measured run (`BENCH_INSTRUCTIONS=on`), with the requests still in flight at its end. */
  instructions?: number | undefined
}

export type Rounds = readonly (readonly TargetResult[])[]

/** What the run was. */
export interface RunSettings {
  durationS: number
  warmupS: number
  connections: number
  pinning: string
  revision: string
  command: string
  databaseUrl: string
  profiled: boolean
  loadAverage: readonly [number, number]
  minutes: number
  chart: string
  baseline?: { readonly ref: string; readonly how: string } | undefined
  /** The servers ran under callgrind (`BENCH_INSTRUCTIONS=on`). */
  counted?: boolean
}

/** Server CPU per answered request, µs: `utime + stime` (s) ÷ responses; `undefined` without either. */
export function cpuPerRequest(cpu: CpuTimes | undefined, responses: number | undefined): number | undefined {
  return cpu === undefined || !responses ? undefined : ((cpu.user + cpu.system) * 1e6) / responses
}

/**
 * Server instructions per create, thousands: callgrind's count ÷ the rows stored with the run's ids, which include the
 * requests in flight when wrk stopped (÷ responses where nothing is stored); `undefined` when not counted.
 */
export function instructionsPerRequest(result: TargetResult): number | undefined {
  const requests = result.storedRows ?? result.load?.responses
  return result.instructions === undefined || !requests ? undefined : result.instructions / requests / 1000
}

/** `a ÷ b`; `undefined` without both, or when `b` is not positive. */
export function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b <= 0 ? undefined : a / b
}
const difference = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined ? undefined : a - b

/** The median of some figures (of an even count, the mean of the two middle ones), with the lowest and highest. */
export interface Spread {
  median: number
  min: number
  max: number
}

/** @returns `undefined` for no values. */
export function spread(values: readonly number[]): Spread | undefined {
  if (values.length === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  const median = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  return { median, min: sorted[0]!, max: sorted.at(-1)! }
}

type Of = (result: TargetResult) => number | undefined

/** The figures of each target, as the Results table and the chart show them. */
export const FIGURES = {
  cpu: { heading: 'server CPU µs per request', digits: 1, of: (r) => cpuPerRequest(r.cpu, r.load?.responses) },
  rps: { heading: 'req/s', digits: 0, of: (r) => r.load?.requestsPerSecond },
  p99: { heading: 'p99 ms', digits: 1, of: (r) => r.load?.latencyMs.p99 },
  lag: { heading: 'event loop delay p99 under load, ms', digits: 1, of: (r) => r.lagP99Ms },
  rss: { heading: 'peak RSS MB', digits: 1, of: (r) => r.peakRssMb },
  ready: { heading: 'ready ms', digits: 0, of: (r) => r.readyMs },
  batch: { heading: 'plants per store transaction', digits: 1, of: (r) => r.meanBatch },
  ins: { heading: 'server instructions per request, thousands', digits: 1, of: instructionsPerRequest },
} as const satisfies Record<string, { heading: string; digits: number; of: Of }>
export type FigureKey = keyof typeof FIGURES
/** Shown only when some target has it. */
const counted = (key: FigureKey, results: readonly TargetResult[]) =>
  key !== 'ins' || results.some((result) => result.instructions !== undefined)

const number = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
/** With its sign: `+1.5`, `−3.0`, `0.0`. */
const signed = (value: number, digits: number) => {
  const text = number(Math.abs(value), digits)
  return Number(text.replace(/,/g, '')) === 0 ? text : `${value < 0 ? '−' : '+'}${text}`
}
const spreadText = (s: Spread, format: (value: number) => string, note = '') =>
  `${format(s.median)} (${format(s.min)}–${format(s.max)}${note})`

const byKey = (round: readonly TargetResult[], key: TargetKey) =>
  round.find((result) => result.key === key && result.load !== undefined)

function perRound(
  rounds: Rounds,
  key: TargetKey,
  measure: (result: TargetResult, round: readonly TargetResult[]) => number | undefined,
) {
  return rounds.flatMap((round) => {
    const result = byKey(round, key)
    const value = result === undefined ? undefined : measure(result, round)
    return value === undefined || Number.isNaN(value) ? [] : [value]
  })
}

/** A target's figure over the rounds. */
export function overRounds(rounds: Rounds, key: TargetKey, figure: FigureKey): Spread | undefined {
  return spread(perRound(rounds, key, FIGURES[figure].of))
}

/** The A/B figures: working tree ÷ baseline, or − for `rss` and `ready`. */
export const AB_KEYS = ['cpu', 'rps', 'p99', 'lag', 'rss', 'ready', 'ins'] as const
export type AbKey = (typeof AB_KEYS)[number]
const AB_NAMES: Record<AbKey, string> = {
  cpu: 'server CPU per create, working tree ÷ baseline',
  rps: 'creates per second, working tree ÷ baseline',
  p99: 'p99 latency, working tree ÷ baseline',
  lag: 'event loop delay p99 under load, working tree ÷ baseline',
  rss: 'peak RSS, working tree − baseline, MB',
  ready: 'ready on existing data, working tree − baseline, ms',
  ins: 'server instructions per create, working tree ÷ baseline',
}
const isRatio = (key: AbKey) => key !== 'rss' && key !== 'ready'
const abFormat = (key: AbKey) => (value: number) =>
  isRatio(key) ? number(value, 2) : signed(value, FIGURES[key].digits)

/** An A/B threshold, judged exactly on the median. */
export interface Threshold {
  key: AbKey
  atLeast: boolean
  value: number
}

/** The thresholds a refactor must keep (`BENCH_AB_THRESHOLDS` states others). */
export const DEFAULT_THRESHOLDS = 'cpu<=1.10,p99<=1.25,rss<=15,ready<=150'
/** Under callgrind only the instructions and the ready time (started without it) compare: the CPU threshold and ready's. */
export const COUNTED_THRESHOLDS = DEFAULT_THRESHOLDS.split(',')
  .filter((item) => /^(cpu|ready)/.test(item))
  .map((item) => item.replace(/^cpu/, 'ins'))
  .join(',')

/** Parses thresholds such as `p99<=0.80,rps>=1.10,rss<=15` (MB). @throws on anything else. */
export function parseThresholds(text: string): Threshold[] {
  return text
    .split(/[\s,]+/)
    .filter((item) => item !== '')
    .map((item) => {
      const match = /^(\w+)(<=|>=)([+-]?\d+(?:\.\d+)?)$/.exec(item)
      const key = match?.[1] as AbKey
      if (match === null || !AB_KEYS.includes(key))
        throw new Error(`threshold ${item}: expected <${AB_KEYS.join('|')}><=|>=<number>`)
      return { key, atLeast: match[2] === '>=', value: Number(match[3]) }
    })
}

const thresholdText = ({ key, atLeast, value }: Threshold) =>
  `${atLeast ? '≥' : '≤'} ${isRatio(key) ? `${number(value, 2)} ×` : `${signed(value, 0)} ${key === 'rss' ? 'MB' : 'ms'}`}`

/** One A/B figure: each round's working tree against that round's baseline, the median and range, the verdict. */
export interface AbVerdict {
  key: AbKey
  perRound: readonly (number | undefined)[]
  measured: Spread | undefined
  threshold: Threshold | undefined
  /** `undefined` without a threshold or without a figure. */
  met: boolean | undefined
}

/** The A/B verdicts, one per {@link AB_KEYS}, each judged against its threshold when one is given. */
export function abVerdicts(rounds: Rounds, thresholds: readonly Threshold[]): AbVerdict[] {
  return AB_KEYS.map((key) => {
    const of = FIGURES[key].of
    const perRound = rounds.map((round) => {
      const [tree, baseline] = [byKey(round, 'embedded'), byKey(round, 'baseline')]
      if (tree === undefined || baseline === undefined) return undefined
      const value = (isRatio(key) ? ratio : difference)(of(tree), of(baseline))
      return value === undefined || Number.isNaN(value) ? undefined : value
    })
    const measured = spread(perRound.filter((value) => value !== undefined))
    const threshold = thresholds.find((each) => each.key === key)
    const met =
      threshold === undefined || measured === undefined
        ? undefined
        : threshold.atLeast
          ? measured.median >= threshold.value
          : measured.median <= threshold.value
    return { key, perRound, measured, threshold, met }
  })
}

/** The service against the design floor and the raw ceiling of the same round: plain figures, no thresholds. */
export const FLOOR_FIGURES = (
  [
    ["server CPU per request ÷ design floor's", 'floor', 'cpu'],
    ["server CPU per request ÷ raw ceiling's", 'raw', 'cpu'],
    ["p99 latency ÷ design floor's", 'floor', 'p99'],
    ["peak RSS − design floor's, MB", 'floor', 'rss'],
    ["ready on existing data ÷ raw ceiling's", 'raw', 'ready'],
    ["ready on existing data − design floor's, ms", 'floor', 'ready'],
  ] as const
).map(([figure, other, key]) => {
  const minus = figure.includes('−')
  const of: Of = FIGURES[key].of
  return {
    figure,
    measure: (result: TargetResult, round: readonly TargetResult[]) => {
      const floor = byKey(round, other)
      return floor && (minus ? difference : ratio)(of(result), of(floor))
    },
    format: (value: number) => (minus ? signed(value, FIGURES[key].digits) : number(value, 2)),
  }
})

/** A service figure against the floor or ceiling over the rounds, as the report shows it; `n/a` without one. */
export function againstFloor(rounds: Rounds, key: TargetKey, figure: (typeof FLOOR_FIGURES)[number]): string {
  const values = perRound(rounds, key, figure.measure)
  const s = spread(values)
  const note = values.length < rounds.length ? `; ${values.length} of ${rounds.length} rounds` : ''
  return s === undefined ? 'n/a' : spreadText(s, figure.format, note)
}

/** 2xx responses of a run. */
export function okResponses(load: LoadSummary): number {
  return Object.entries(load.statuses).reduce((sum, [status, count]) => sum + (status.startsWith('2') ? count : 0), 0)
}

/** Socket errors, non-2xx, wrong bodies, 200s not stored (when counted) and an unasked exit (one). */
export function faults(result: TargetResult): number {
  const load = result.load
  if (load === undefined) return 0
  const unstored = result.storedRows === undefined ? 0 : Math.max(0, okResponses(load) - result.storedRows)
  return load.errors + load.non2xx + load.wrongBodies + unstored + (result.exited === undefined ? 0 : 1)
}

/** The targets measured in some round, with their titles, in {@link TARGET_KEYS} order. */
export function measuredTargets(rounds: Rounds, keys: readonly TargetKey[] = TARGET_KEYS) {
  return keys.flatMap((key) => {
    const result = rounds.map((round) => byKey(round, key)).find((each) => each !== undefined)
    return result === undefined ? [] : [{ key, title: result.title }]
  })
}

function resultsSection(rounds: Rounds): string[] {
  const keys = (Object.keys(FIGURES) as FigureKey[]).filter((key) => counted(key, rounds.flat()))
  const rows = TARGET_KEYS.flatMap((key) => {
    const measured = rounds.filter((round) => byKey(round, key) !== undefined).length
    const any = rounds.flat().find((result) => result.key === key)
    if (any === undefined) return []
    if (measured === 0) return [`| ${any.title} | not run: ${any.notRun ?? 'unknown'} |${' |'.repeat(keys.length)}`]
    const cells = keys.map((figure) => {
      const s = overRounds(rounds, key, figure)
      return s === undefined ? 'n/a' : spreadText(s, (value) => number(value, FIGURES[figure].digits))
    })
    return [`| ${any.title} | ${measured} of ${rounds.length} | ${cells.join(' | ')} |`]
  })
  const notes = measuredTargets(rounds).flatMap(({ key, title }) => {
    const results = rounds.map((round) => byKey(round, key))
    const exited = results.flatMap((r, index) => (r?.exited === undefined ? [] : [`${index + 1} (${r.exited})`]))
    const saturated = results.filter((r) => (r?.load?.generatorCpuPercent ?? 0) >= 90).length
    return [
      ...(exited.length === 0
        ? []
        : [`**${title} exited unasked** in round ${exited.join(', ').replace(/\|/g, '\\|')}.`]),
      ...(saturated === 0
        ? []
        : [`wrk saturated its core against ${title} in ${saturated} rounds: req/s there is a lower bound.`]),
    ]
  })
  return [
    '## Results',
    '',
    'Median (lowest–highest) over the rounds that measured the target.',
    '',
    `| target | rounds | ${keys.map((key) => FIGURES[key].heading).join(' | ')} |`,
    `|---|---:|${keys.map(() => '---:').join('|')}|`,
    ...rows,
    '',
    ...notes.flatMap((note) => [note, '']),
  ]
}

function abSection(rounds: Rounds, settings: RunSettings, thresholds: readonly Threshold[]): string[] {
  if (measuredTargets(rounds, ['embedded']).length === 0 || measuredTargets(rounds, ['baseline']).length === 0)
    return []
  const ref = `\`${settings.baseline?.ref ?? 'baseline'}\``
  return [
    `## Working tree against ${ref}`,
    '',
    `The working tree's service against the service at ${ref}, on the embedded store: each round's figure, their median (lowest–highest), judged against the threshold.`,
    '',
    '| figure | threshold | median (lowest–highest) | rounds 1, 2, … | verdict |',
    '|---|---|---:|---|---|',
    ...abVerdicts(rounds, thresholds)
      .filter(({ key, threshold }) => threshold !== undefined || counted(key, rounds.flat()))
      .map(({ key, perRound: values, measured, threshold, met }) => {
        const format = abFormat(key)
        const verdict = threshold === undefined ? '' : met === undefined ? 'not measured' : met ? 'met' : '**not met**'
        return `| ${AB_NAMES[key]} | ${threshold === undefined ? '' : thresholdText(threshold)} | ${measured === undefined ? 'n/a' : spreadText(measured, format)} | ${values.map((v) => (v === undefined ? '–' : format(v))).join(', ')} | ${verdict} |`
      }),
    '',
  ]
}

function floorSection(rounds: Rounds): string[] {
  const columns = measuredTargets(rounds, ['embedded', 'baseline', 'postgres'])
  const rows = FLOOR_FIGURES.flatMap((figure) => {
    const cells = columns.map(({ key }) => againstFloor(rounds, key, figure))
    return cells.every((cell) => cell === 'n/a') ? [] : [`| ${figure.figure} | ${cells.join(' | ')} |`]
  })
  if (rows.length === 0) return []
  return [
    '## Against the design floor and the raw ceiling',
    '',
    "Each round's figure, against that round's floor or ceiling; their median (lowest–highest).",
    '',
    `| figure | ${columns.map((column) => column.title).join(' | ')} |`,
    `|---|${columns.map(() => '---:').join('|')}|`,
    ...rows,
    '',
  ]
}

function correctnessSection(rounds: Rounds): string[] {
  const measured = rounds.flat().filter((result) => result.load !== undefined)
  if (measured.length === 0) return []
  const byTarget = measuredTargets(rounds).flatMap(({ key, title }) => {
    const count = measured.filter((result) => result.key === key).reduce((sum, result) => sum + faults(result), 0)
    return count === 0 ? [] : [`${title}: ${number(count)}`]
  })
  const total = measured.reduce((sum, result) => sum + faults(result), 0)
  return [
    '## Correctness',
    '',
    `Summed over every target and round (${measured.length} runs); any fault is a bug.`,
    '',
    '| check | required | measured |',
    '|---|---|---|',
    `| errors, non-2xx, wrong bodies, 200s not stored | 0 | ${total === 0 ? '0: met' : `${number(total)} (${byTarget.join('; ')}): **not met**`} |`,
    '',
  ]
}

/** The generated part of the report. */
export function renderResults(date: Date, s: RunSettings, rounds: Rounds, thresholds: readonly Threshold[]): string {
  const when = date.toISOString()
  const [start, end] = s.loadAverage.map((value) => number(value, 2))
  return [
    '# Benchmarks',
    '',
    `<!-- Generated by \`npm run bench\` (bench/run.ts) on ${when}. Edit only below the hand-written marker. -->`,
    '',
    `![Server CPU per create and p99 latency of each target: a point at the median of the rounds, a rule from the lowest to the highest](${s.chart})`,
    '',
    `- ${cpus()[0]?.model}, ${cpus().length} cores, ${number(totalmem() / 2 ** 30, 1)} GiB; Node ${process.version}, Linux ${release()}; ${when}; the rounds took ${number(s.minutes, 1)} min, load average ${start} → ${end}.`,
    `- ${rounds.length} round${rounds.length === 1 ? '' : 's'} of ${s.warmupS} s warm-up and ${s.durationS} s measured per target, ${s.connections} connections; pinning: ${s.pinning}.${s.profiled ? ' **Profiled** (`node --cpu-prof`): the service figures are higher.' : ''}${s.counted ? " **Counted**: each measured start ran under callgrind, so only its instructions and the ready time (a start without it) compare; its CPU, latency, throughput and memory are the emulator's." : ''}`,
    `- Service: ${s.revision}, \`${s.command}\`; PostgreSQL: \`${s.databaseUrl}\`.`,
    ...(s.baseline === undefined ? [] : [`- Baseline: \`${s.baseline.ref}\`, ${s.baseline.how}.`]),
    '- How each figure is taken: Method, below.',
    '',
    ...resultsSection(rounds),
    ...abSection(rounds, s, thresholds),
    ...floorSection(rounds),
    ...correctnessSection(rounds),
  ].join('\n')
}

/** Writes the report: the generated part, then the hand-written part of the previous report (or a placeholder). */
export function writeReport(path: string, generated: string): void {
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : ''
  const at = previous.indexOf(HAND_WRITTEN)
  const kept = at === -1 ? `${HAND_WRITTEN}\n\n## Decisions\n\nNone yet.\n` : previous.slice(at)
  writeFileSync(path, `${generated}\n${kept.trimEnd()}\n`)
}
