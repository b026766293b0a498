/**
 * The arithmetic that decides the benchmark's verdicts (bench/report.ts): CPU per
 * request, each target's threshold judged round by round against the design floor and
 * raw ceiling of the same round, the median and range over rounds, the fault count
 * summed over rounds, the round the report shows, the figures read from wrk's
 * result line, and the parts a new report keeps from the previous one.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { type LoadSummary, parseWrk } from './load.js'
import {
  cpuPerRequest,
  faults,
  GOALS,
  HAND_WRITTEN,
  medianRound,
  okResponses,
  ratio,
  renderResults,
  type Rounds,
  type RunSettings,
  spread,
  stolenShares,
  type TargetKey,
  type TargetResult,
  verdict,
  writeReport,
} from './report.js'

function load(requestsPerSecond: number, overrides: Partial<LoadSummary> = {}): LoadSummary {
  return {
    requestsPerSecond,
    responses: requestsPerSecond * 10,
    seconds: 10,
    latencyMs: { p50: 1, p99: 5, max: 20, mean: 1.5 },
    errors: 0,
    non2xx: 0,
    wrongBodies: 0,
    statuses: { '200': requestsPerSecond * 10 },
    generatorCpuPercent: 40,
    firstId: 0n,
    idCount: 10n ** 9n,
    ...overrides,
  }
}

const goal = (start: string) => GOALS.find((each) => each.figure.startsWith(start))!
const judged = (start: string, rounds: Rounds) => verdict(goal(start), 'embedded', rounds)

/** A target's figures in one round. */
interface Figures {
  readonly cpuUs?: number
  readonly p99?: number
  /** p99 of the warm-up, ms; none when left out. */
  readonly warmupP99?: number
  readonly peakRssMb?: number
  readonly readyMs?: number
  readonly storedRows?: number
}

/** A measured target: 1,000,000 responses, so `cpuUs` seconds of CPU are `cpuUs` µs per request. */
function measured(key: TargetKey, figures: Figures = {}): TargetResult {
  const { cpuUs = 40, p99 = 4, warmupP99, peakRssMb = 100, readyMs = 500, storedRows } = figures
  const run = load(100_000, { latencyMs: { p50: 1, p99, max: 20, mean: 1.5 } })
  return { key, title: key, load: run, warmupP99Ms: warmupP99, cpu: { user: cpuUs, system: 0 }, peakRssMb, readyMs, ...(storedRows === undefined ? {} : { storedRows }) }
}

/** A run's settings, as `run.ts` passes them (the figures come from the rounds). */
const SETTINGS: RunSettings = {
  durationS: 1,
  warmupS: 0,
  connections: 50,
  pinning: 'none',
  idBase: 0n,
  databaseUrl: 'postgres://postgres@127.0.0.1:5432/test',
  revision: 'commit `abc1234`',
  serviceNodeOptions: ['--max-semi-space-size=4'],
  serviceEnvironment: ['MALLOC_ARENA_MAX=1'],
  profiled: false,
  loadAverage: [0, 0],
  instructions: 'not counted',
}

/**
 * One round: the raw ceiling (ready in 200 ms), the design floor (by default 40 µs,
 * p99 4 ms, peak RSS 100 MB, ready in 500 ms), and the service on the embedded store
 * unless `service` is `undefined`.
 */
function round(service: Figures | undefined, floor: Figures = {}): TargetResult[] {
  return [measured('raw', { readyMs: 200 }), measured('floor', floor), ...(service === undefined ? [] : [measured('embedded', service)])]
}

t.test('CPU per request: utime + stime over the run ÷ responses, in µs', async (t) => {
  t.same(cpuPerRequest({ user: 3, system: 1 }, 100_000), { user: 30, system: 10, total: 40 })
  t.equal(cpuPerRequest({ user: 3, system: 1 }, 0), undefined, 'no response, no figure')
  t.equal(cpuPerRequest(undefined, 100), undefined)
  t.equal(ratio(50, 40), 1.25)
  t.equal(ratio(50, 0), undefined)
  t.equal(ratio(undefined, 40), undefined)
})

t.test('median and range: the middle value; of an even count, the mean of the two middle ones', async (t) => {
  t.same(spread([3, 1, 2]), { median: 2, min: 1, max: 3 })
  t.same(spread([4, 1, 3, 2]), { median: 2.5, min: 1, max: 4 })
  t.same(spread([7]), { median: 7, min: 7, max: 7 })
  t.equal(spread([]), undefined)
})

t.test('server CPU per durable create ÷ the design floor’s: met up to 1.15', async (t) => {
  t.same(judged('server CPU', [round({ cpuUs: 46 })]), { measured: '1.15 (1.15–1.15)', met: true }, '46 ÷ 40 µs')
  t.same(judged('server CPU', [round({ cpuUs: 46.01 })]), { measured: '1.15 (1.15–1.15)', met: false }, '46.01 µs: shown rounded, judged exactly')
})

t.test('p99 ÷ the design floor’s p99: met up to 1.5', async (t) => {
  t.same(judged('p99', [round({ p99: 6 })]), { measured: '1.50 (1.50–1.50)', met: true }, '6 ÷ 4 ms')
  t.same(judged('p99', [round({ p99: 6.01 })]), { measured: '1.50 (1.50–1.50)', met: false })
})

t.test('peak RSS − the design floor’s: met up to 20 MB', async (t) => {
  t.same(judged('peak RSS', [round({ peakRssMb: 120 })]), { measured: '20.0 (20.0–20.0)', met: true }, '120 − 100 MB')
  t.same(judged('peak RSS', [round({ peakRssMb: 120.04 })]), { measured: '20.0 (20.0–20.0)', met: false })
})

t.test('ready on existing data: up to 4 × the raw ceiling’s, up to 100 ms over the design floor’s', async (t) => {
  t.same(judged('ready on existing data (spawn', [round({ readyMs: 800 })]), { measured: '4.00 (4.00–4.00)', met: true }, '800 ÷ 200 ms')
  t.same(judged('ready on existing data (spawn', [round({ readyMs: 800.8 })]), { measured: '4.00 (4.00–4.00)', met: false })
  t.same(judged('ready on existing data −', [round({ readyMs: 600 })]), { measured: '100 (100–100)', met: true }, '600 − 500 ms')
  t.same(judged('ready on existing data −', [round({ readyMs: 600.4 })]), { measured: '100 (100–100)', met: false })
})

t.test('each round’s service is compared with the design floor of that same round', async (t) => {
  // Crossed, 40 ÷ 80 and 96 ÷ 40 would be 0.50 and 2.40.
  const cpu = [round({ cpuUs: 40 }, { cpuUs: 40 }), round({ cpuUs: 96 }, { cpuUs: 80 })]
  t.same(judged('server CPU', cpu), { measured: '1.10 (1.00–1.20)', met: true }, '40 ÷ 40 and 96 ÷ 80')
  const rss = [round({ peakRssMb: 110 }, { peakRssMb: 100 }), round({ peakRssMb: 180 }, { peakRssMb: 150 }), round({ peakRssMb: 205 }, { peakRssMb: 200 })]
  t.same(judged('peak RSS', rss), { measured: '10.0 (5.0–30.0)', met: true }, '+10, +30, +5 MB')
})

t.test('the verdict judges the median of the rounds: of two, the mean of both; of three, the middle one', async (t) => {
  t.same(judged('server CPU', [round({ cpuUs: 40 }), round({ cpuUs: 56 })]), { measured: '1.20 (1.00–1.40)', met: false }, 'the better round alone would be met')
  t.same(judged('server CPU', [round({ cpuUs: 52 }), round({ cpuUs: 40 }), round({ cpuUs: 44 })]), { measured: '1.10 (1.00–1.30)', met: true }, 'the worse round alone would not be')
  t.same(judged('server CPU', [round({ cpuUs: 48 }), round({ cpuUs: 40 }), round({ cpuUs: 52 })]), { measured: '1.20 (1.00–1.30)', met: false }, 'the best round alone would be met')
})

t.test('a round without the design floor or the service gives no figure; none at all is not measured', async (t) => {
  const withoutFloor = (service: Figures) => round(service).filter((result) => result.key !== 'floor')
  const floorFailed = (service: Figures) => round(service).map((result) => (result.key === 'floor' ? { key: result.key, title: result.title, notRun: 'failed: exited' } : result))
  const notMeasured = { measured: 'n/a', met: undefined }
  t.same(judged('server CPU', [withoutFloor({ cpuUs: 46 })]), notMeasured)
  t.same(judged('peak RSS', [floorFailed({}), floorFailed({})]), notMeasured, 'the floor failed in every round')
  t.same(judged('ready on existing data (spawn', [round({}).filter((result) => result.key !== 'raw')]), notMeasured, 'no raw ceiling')
  t.same(verdict(goal('server CPU'), 'postgres', [round({ cpuUs: 46 })]), notMeasured, 'the service not run')
  t.same(judged('server CPU', [withoutFloor({ cpuUs: 80 }), round({ cpuUs: 44 })]), { measured: '1.10 (1.10–1.10; 1 of 2 rounds)', met: true }, 'the round with a floor counts alone')
})

t.test('faults: errors, non-2xx, wrong bodies and 200s whose plant is not stored', async (t) => {
  const run = load(100, { errors: 1, non2xx: 2, wrongBodies: 3, statuses: { '200': 990, '201': 5, '503': 2 } })
  t.equal(okResponses(run), 995)
  t.equal(faults({ key: 'embedded', title: 'embedded', load: run, storedRows: 990 }), 1 + 2 + 3 + 5)
  t.equal(faults({ key: 'embedded', title: 'embedded', load: run, storedRows: 1010 }), 6, 'rows of requests sent but not answered in time are no fault')
  t.equal(faults({ key: 'unstored', title: 'ablation', load: run }), 6, 'nothing to count where nothing is stored')
  t.equal(faults({ key: 'embedded', title: 'embedded', notRun: 'failed' }), undefined)
})

t.test('errors: the sum over all rounds, not a median', async (t) => {
  const unstored = (count: number): Figures => ({ storedRows: 1_000_000 - count })
  t.same(judged('errors', [round(unstored(0)), round(unstored(0)), round(unstored(0))]), { measured: '0', met: true })
  t.same(judged('errors', [round(unstored(0)), round(unstored(0)), round(unstored(2))]), { measured: '2', met: false }, 'the median round had none')
  t.same(judged('errors', [round(unstored(1)), round(unstored(0)), round(unstored(2))]), { measured: '3', met: false })
  t.same(judged('errors', [round(unstored(0)), round(undefined), round(unstored(0))]), { measured: '0 (2 of 3 rounds)', met: true }, 'a round without the service')
  t.same(judged('errors', [round(undefined)]), { measured: 'n/a', met: undefined })
})

t.test('the warm-up’s p99: reported against the design floor’s of the same round, with no target', async (t) => {
  const report = renderResults(new Date(0), SETTINGS, [round({ warmupP99: 30 }, { warmupP99: 10 }), round({ warmupP99: 12 }, { warmupP99: 8 }), round({ warmupP99: 40 }, { warmupP99: 20 })])
  t.match(report, "| (no target) p99 latency in the warm-up (the first seconds of load after a start) ÷ design floor's | — | 2.00 (1.50–3.00) | n/a |", 'ratios 3, 1.5, 2')
  t.match(report, /^\| embedded \| 3 of 3 \| [^|]+ \| [^|]+ \| 30\.0 \(12\.0–40\.0\) \|/m, 'the Rounds table’s warm-up column')
  t.match(report, /^\| floor \| 3 of 3 \| [^|]+ \| [^|]+ \| 10\.0 \(8\.0–20\.0\) \|/m)
})

t.test('the round shown: the median server CPU per request; of an even count, the lower middle one', async (t) => {
  const rounds = (...cpuUs: number[]) => cpuUs.map((us) => measured('embedded', { cpuUs: us }))
  const failed: TargetResult = { key: 'embedded', title: 'embedded', notRun: 'failed' }
  t.equal(medianRound(rounds(70, 40, 50))?.round, 3)
  t.equal(medianRound(rounds(60, 40, 70, 50))?.round, 4, '40, 50 | 60, 70: the round of 50')
  t.equal(medianRound([undefined, failed, ...rounds(55)])?.round, 3, 'rounds not measured are left out')
  t.equal(medianRound([failed, undefined]), undefined)
})

t.test('the report: each target’s median round, the spread over the rounds, the verdicts as CI reads them', async (t) => {
  const report = renderResults(new Date(0), SETTINGS, [round({ cpuUs: 44 }), round({ cpuUs: 52 }), round({ cpuUs: 46 })])
  t.match(report, /^- Rounds: 3, interleaved/m)
  t.match(report, /default log level \(`info`/)
  t.match(report, '`MALLOC_ARENA_MAX=1 node --max-semi-space-size=4 dist/service/server.js` (the image\'s command)')
  t.notMatch(report, /LOG_LEVEL/)
  t.match(report, /^\| embedded \| 3 \| 100,000 \| .* \| 46\.0 \(46\.0 \+ 0\.0\) \|/m, 'the Results row is the round of the median CPU')
  t.match(report, '| embedded | 3 of 3 | 46.0 (44.0–52.0) | 4.0 (4.0–4.0) | n/a | 100.0 (100.0–100.0) | 500 (500–500) | 100,000 (100,000–100,000) |')
  t.match(report, "| (no target) p99 latency in the warm-up (the first seconds of load after a start) ÷ design floor's | — | n/a | n/a |", 'no warm-up, no figure')
  t.match(report, "| server CPU per durable create ÷ design floor's | ≤ 1.15 | 1.15 (1.10–1.30): met | not measured |")
  t.match(report, '| errors, non-2xx, wrong bodies, 200s not stored | 0 | 0: met | not measured |')
})

t.test('wrk’s result line: req/s over wrk’s own duration, non-2xx from the statuses, latency in ms', async (t) => {
  const line =
    'bench-result {"durationUs":2000000,"requests":30001,"statuses":{"200":29990,"201":1,"503":7,"404":3},"wrongBodies":2,' +
    '"errors":{"connect":1,"read":2,"write":0,"timeout":4},"latencyUs":{"p50":1500,"p99":5999,"max":12000,"mean":1600.5},"cpuS":0.5}'
  const run = parseWrk(`Running 2s test\n${line}\n`, 1, 10n, 1000n)
  t.equal(run.requestsPerSecond, 15_000.5)
  t.equal(run.non2xx, 10)
  t.equal(run.errors, 7)
  t.equal(run.wrongBodies, 2)
  t.same(run.latencyMs, { p50: 1.5, p99: 5.999, max: 12, mean: 1.6005 })
  t.equal(run.generatorCpuPercent, 25)
  t.throws(() => parseWrk('unable to connect to 127.0.0.1:1 Connection refused', 1, 0n, 0n), /wrk gave no result: unable to connect/)
})

t.test('stolen CPU time: the steal column over each CPU\'s time, guest time not counted twice', async (t) => {
  // user nice system idle iowait irq softirq steal guest guest_nice (proc(5))
  const before = 'cpu  10 0 10 100 0 0 0 10 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 10 7 0\nintr 1\n'
  const after = 'cpu  80 0 20 200 0 0 0 40 0 0\ncpu0 25 0 10 60 0 0 0 5 0 0\ncpu1 55 0 10 140 0 0 0 35 99 0\nintr 2\n'
  const shares = stolenShares(before, after)!
  t.equal(shares.length, 2, 'one share per CPU, the aggregate line left out')
  t.equal(shares[0], 5 / 40)
  t.equal(shares[1], 25 / 170, 'guest time (already in user) is not added')
  t.equal(stolenShares(before, 'cpu0 5 0 5 50 0 0 0 0 0 0\n'), undefined, 'CPUs differ')
  t.equal(stolenShares(before, before), undefined, 'no time passed')
})

t.test('a new report keeps the hand-written part and, when no soak ran, the previous soak; a first report gets a placeholder', async (t) => {
  const path = join(t.testdir(), 'benchmarks.md')
  writeReport(path, '# Benchmarks\n\nfirst run\n', undefined)
  const first = readFileSync(path, 'utf8')
  t.match(first, /No soak run yet/)
  t.match(first, `${HAND_WRITTEN}\n\n## What it measures, and why\n\nNot written yet.\n`)

  const handWritten = `${HAND_WRITTEN}\n\n## Decisions\n\nOne log line per request.\n`
  writeFileSync(path, first.replace(/<!-- Hand-written[^]*$/, handWritten).replace(/No soak run yet[^\n]*/, 'soak of the last run'))
  writeReport(path, '# Benchmarks\n\nsecond run\n', undefined)
  const second = readFileSync(path, 'utf8')
  t.match(second, /^# Benchmarks\n\nsecond run\n/, 'the generated part is new')
  t.match(second, /<!-- soak:start -->\nsoak of the last run\n<!-- soak:end -->/, 'the previous soak, kept')
  t.ok(second.endsWith(handWritten), 'the hand-written part, kept as it was')

  writeReport(path, '# Benchmarks\n\nthird run\n', 'this run\'s soak')
  t.match(readFileSync(path, 'utf8'), /<!-- soak:start -->\nthis run's soak\n<!-- soak:end -->/, 'a new soak replaces it')
})
