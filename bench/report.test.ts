/** The benchmark report's arithmetic (bench/report.ts), wrk's result line and the service's metrics. */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parseWrk } from './load.ts'
import { meanBatch, parseScrape } from './metrics.ts'
import {
  abVerdicts,
  againstFloor,
  COUNTED_THRESHOLDS,
  cpuPerRequest,
  DEFAULT_THRESHOLDS,
  faults,
  FLOOR_FIGURES,
  HAND_WRITTEN,
  parseThresholds,
  renderResults,
  roundOrder,
  type Rounds,
  type RunSettings,
  spread,
  type TargetKey,
  type TargetResult,
  writeReport,
} from './report.ts'

interface Figures {
  cpuUs?: number
  p99?: number
  rps?: number
  lag?: number
  rss?: number
  ready?: number
  stored?: number
  instructions?: number
}

/** A measured target: 1,000,000 responses, so `cpuUs` seconds of CPU are `cpuUs` µs per request. */
function measured(key: TargetKey, f: Figures = {}): TargetResult {
  const responses = 1_000_000
  return {
    key,
    title: key,
    load: {
      requestsPerSecond: f.rps ?? 10_000,
      responses,
      latencyMs: { p50: 1, p99: f.p99 ?? 4, max: 20 },
      errors: 0,
      non2xx: 0,
      wrongBodies: 0,
      statuses: { '200': responses },
      generatorCpuPercent: 40,
      firstId: 0n,
      idCount: 10n ** 9n,
    },
    cpu: { user: f.cpuUs ?? 40, system: 0 },
    peakRssMb: f.rss ?? 100,
    readyMs: f.ready ?? 500,
    lagP99Ms: f.lag,
    ...(f.stored === undefined ? {} : { storedRows: f.stored }),
    ...(f.instructions === undefined ? {} : { instructions: f.instructions }),
  }
}

const SETTINGS: RunSettings = {
  durationS: 1,
  warmupS: 0,
  connections: 50,
  pinning: 'none',
  revision: 'commit `abc1234`',
  command: 'node dist/service/server.js',
  databaseUrl: 'postgres://127.0.0.1/test',
  profiled: false,
  loadAverage: [0, 0],
  minutes: 1,
  chart: 'benchmarks.svg',
}
const defaults = parseThresholds(DEFAULT_THRESHOLDS)
const ab = (tree: Figures, baseline: Figures) => [measured('embedded', tree), measured('baseline', baseline)]
const verdict = (key: string, rounds: Rounds, thresholds = defaults) =>
  abVerdicts(rounds, thresholds).find((each) => each.key === key)!
const floor = (start: string, rounds: Rounds) =>
  againstFloor(
    rounds,
    'embedded',
    FLOOR_FIGURES.find((each) => each.figure.startsWith(start))!,
  )

t.test('CPU per request, and the median of the rounds with their range', async (t) => {
  t.equal(cpuPerRequest({ user: 3, system: 1 }, 100_000), 40, '(utime + stime) ÷ responses, µs')
  t.equal(cpuPerRequest({ user: 3, system: 1 }, 0), undefined)
  t.same(spread([3, 1, 2]), { median: 2, min: 1, max: 3 })
  t.same(spread([4, 1, 3, 2]), { median: 2.5, min: 1, max: 4 }, 'of an even count, the mean of the middle two')
  t.equal(spread([]), undefined)
})

t.test('against the floor and the ceiling: each round against its own, then the median', async (t) => {
  const round = (service: Figures, floorFigures: Figures) => [
    measured('raw', { ready: 200 }),
    measured('floor', floorFigures),
    measured('embedded', service),
  ]
  // Crossed, 40 ÷ 80 and 96 ÷ 40 would be 0.50 and 2.40.
  const rounds = [round({ cpuUs: 40 }, { cpuUs: 40 }), round({ cpuUs: 96 }, { cpuUs: 80 })]
  t.equal(floor('server CPU per request ÷ design', rounds), '1.10 (1.00–1.20)')
  t.equal(floor('server CPU per request ÷ raw', rounds), '1.70 (1.00–2.40)')
  t.equal(floor('peak RSS', [round({ rss: 90 }, {})]), '−10.0 (−10.0–−10.0)')
  t.equal(floor('ready on existing data ÷', [round({ ready: 800 }, {})]), '4.00 (4.00–4.00)')
  const withoutFloor = [[measured('embedded')], round({ cpuUs: 44 }, {})]
  t.equal(floor('server CPU per request ÷ design', withoutFloor), '1.10 (1.10–1.10; 1 of 2 rounds)')
})

t.test('A/B: the default thresholds, judged exactly on the median of the per-round figures', async (t) => {
  t.same(verdict('cpu', [ab({ cpuUs: 44 }, { cpuUs: 40 })]).met, true, '44 ÷ 40 = 1.10')
  t.equal(verdict('cpu', [ab({ cpuUs: 44.01 }, { cpuUs: 40 })]).met, false, 'shown 1.10, judged exactly')
  t.equal(verdict('p99', [ab({ p99: 5 }, { p99: 4 })]).met, true)
  t.equal(verdict('p99', [ab({ p99: 5.01 }, { p99: 4 })]).met, false)
  t.equal(verdict('rss', [ab({ rss: 115.01 }, { rss: 100 })]).met, false)
  t.equal(verdict('ready', [ab({ ready: 650 }, { ready: 500 })]).met, true, '+150 ms')
  t.equal(verdict('rps', [ab({}, {})]).met, undefined, 'creates per second: reported, no default threshold')
  // Pooled, the medians would give 60 ÷ 60 = 1.00.
  const rounds = [ab({ cpuUs: 48 }, { cpuUs: 40 }), ab({ cpuUs: 60 }, { cpuUs: 60 }), ab({ cpuUs: 96 }, { cpuUs: 80 })]
  t.same(verdict('cpu', rounds).perRound, [1.2, 1, 1.2], 'each round against its own baseline')
  t.equal(verdict('cpu', rounds).met, false)
  const partial = verdict('cpu', [ab({ cpuUs: 44 }, { cpuUs: 40 }), [measured('embedded')]])
  t.same(partial.perRound, [1.1, undefined], 'a round without the baseline gives no figure')
})

t.test('A/B: thresholds stated for a run, creates per second and the event loop as ratios', async (t) => {
  const stated = parseThresholds('p99<=0.80, rps>=1.10 cpu<=1.10,rss<=15,ready<=150')
  t.same(stated[1], { key: 'rps', atLeast: true, value: 1.1 })
  t.equal(verdict('rps', [ab({ rps: 11_000 }, { rps: 10_000 })], stated).met, true, '1.10 × the creates')
  t.equal(verdict('rps', [ab({ rps: 10_999 }, { rps: 10_000 })], stated).met, false)
  t.equal(verdict('p99', [ab({ p99: 4 }, { p99: 5 })], stated).met, true, '0.80 ×')
  t.equal(verdict('p99', [ab({ p99: 5 }, { p99: 4 })], stated).met, false, 'the default 1.25 no longer holds')
  t.same(verdict('lag', [ab({ lag: 12 }, { lag: 24 })], stated).measured, { median: 0.5, min: 0.5, max: 0.5 })
  t.throws(() => parseThresholds('p99<0.8'), /threshold p99<0.8/)
  t.throws(() => parseThresholds('heap<=1'), /threshold heap<=1/)
  const report = renderResults(
    new Date(0),
    { ...SETTINGS, baseline: { ref: 'b2225c4', how: 'linked' } },
    [ab({ rps: 11_500, lag: 10 }, { rps: 10_000, lag: 20 })],
    stated,
  )
  t.match(report, '| creates per second, working tree ÷ baseline | ≥ 1.10 × | 1.15 (1.15–1.15) | 1.15 | met |')
  t.match(report, '| event loop delay p99 under load, working tree ÷ baseline |  | 0.50 (0.50–0.50) | 0.50 |  |')
  t.match(report, '| p99 latency, working tree ÷ baseline | ≤ 0.80 × | 1.00 (1.00–1.00) | 1.00 | **not met** |')
  t.match(report, '| peak RSS, working tree − baseline, MB | ≤ +15 MB | 0.0 (0.0–0.0) | 0.0 | met |')
})

t.test('counted: instructions per create over the rows stored, judged by the CPU threshold', async (t) => {
  const counted = parseThresholds(COUNTED_THRESHOLDS)
  t.same(
    counted.map(({ key }) => key),
    ['ins', 'ready'],
    "under callgrind only the instructions and the ready time (a start without it) compare; CPU's threshold is theirs",
  )
  t.equal(counted[0]!.value, parseThresholds(DEFAULT_THRESHOLDS).find(({ key }) => key === 'cpu')!.value)
  const a = measured('embedded', { instructions: 230e9, stored: 1_000_050 })
  t.equal(
    verdict('ins', [[a, measured('baseline', { instructions: 200e9 })]], counted).measured?.median.toFixed(4),
    '1.1499',
  )
  t.equal(
    verdict('ins', [[a, measured('baseline', { instructions: 200e9, stored: 1_000_050 })]], counted).met,
    false,
    'each divided by the creates it served, those in flight at the end included',
  )
  t.equal(verdict('ins', [ab({ instructions: 220e9 }, { instructions: 200e9 })], counted).met, true, '1.10')
  const report = renderResults(
    new Date(0),
    { ...SETTINGS, counted: true, baseline: { ref: 'fa9b7d2', how: 'linked' } },
    [ab({ instructions: 243e9 }, { instructions: 216e9 })],
    counted,
  )
  t.match(report, '**Counted**')
  t.match(report, /^\| target \|.*\| server instructions per request, thousands \|$/m)
  t.match(report, /^\| embedded \| 1 of 1 \|.*\| 243\.0 \(243\.0–243\.0\) \|$/m)
  t.match(
    report,
    '| server instructions per create, working tree ÷ baseline | ≤ 1.10 × | 1.13 (1.13–1.13) | 1.13 | **not met** |',
  )
  const timed = renderResults(new Date(0), SETTINGS, [ab({}, {})], defaults)
  t.notMatch(timed, /instructions|Counted/, 'not counted: neither the column nor the A/B row')
})

t.test('the baseline and the working tree swap places every other round', async (t) => {
  const selected = new Set<TargetKey>(['embedded', 'baseline', 'floor'])
  t.same(roundOrder(1, selected), ['floor', 'embedded', 'baseline'])
  t.same(roundOrder(2, selected), ['floor', 'baseline', 'embedded'])
  t.same(roundOrder(2, new Set<TargetKey>(['raw', 'embedded'])), ['raw', 'embedded'])
})

t.test('faults: errors, non-2xx, wrong bodies, 200s not stored, an unasked exit; summed over rounds', async (t) => {
  const result = measured('embedded', { stored: 999_990 })
  const load = { ...result.load!, errors: 1, non2xx: 2, wrongBodies: 3 }
  t.equal(faults({ ...result, load }), 1 + 2 + 3 + 10)
  t.equal(faults(measured('embedded', { stored: 1_000_010 })), 0, 'rows of requests not answered in time')
  t.equal(faults({ ...measured('floor'), exited: 'code 1: TypeError' }), 1)
  const report = renderResults(
    new Date(0),
    SETTINGS,
    [[measured('embedded')], [measured('embedded', { stored: 5 })]],
    defaults,
  )
  t.match(report, '| errors, non-2xx, wrong bodies, 200s not stored | 0 | 999,995 (embedded: 999,995): **not met** |')
})

t.test(
  'the report: figures over the rounds with the event loop delay, the chart, no A/B without a baseline',
  async (t) => {
    const rounds = [44, 52, 46].map((cpuUs, index) => [
      measured('floor', { cpuUs: 40 }),
      measured('embedded', { cpuUs, lag: 10 + index }),
    ])
    const report = renderResults(new Date(0), SETTINGS, rounds, defaults)
    t.match(report, '](benchmarks.svg)')
    t.match(
      report,
      '| target | rounds | server CPU µs per request | req/s | p99 ms | event loop delay p99 under load, ms |',
    )
    t.match(
      report,
      '| embedded | 3 of 3 | 46.0 (44.0–52.0) | 10,000 (10,000–10,000) | 4.0 (4.0–4.0) | 11.0 (10.0–12.0) |',
    )
    t.match(report, /^\| floor \| 3 of 3 \| 40\.0 \(40\.0–40\.0\) \|.* \| n\/a \|/m, 'no metrics, no event loop figure')
    t.match(report, "| server CPU per request ÷ design floor's | 1.15 (1.10–1.30) |")
    t.match(report, '| errors, non-2xx, wrong bodies, 200s not stored | 0 | 0: met |')
    t.notMatch(report, /≤|not met|## Working tree/)
    const failed = renderResults(new Date(0), SETTINGS, [[{ key: 'postgres', title: 'pg', notRun: 'unreachable' }]], [])
    t.match(failed, '| pg | not run: unreachable |')
  },
)

t.test("wrk's result line and the service's metrics", async (t) => {
  const line =
    'bench-result {"durationUs":2000000,"requests":30001,"statuses":{"200":29990,"503":7,"404":4},"wrongBodies":2,' +
    '"errors":{"connect":1,"read":2,"write":0,"timeout":4},"latencyUs":{"p50":1500,"p99":5999,"max":12000},"cpuS":0.5}'
  const run = parseWrk(`Running 2s test\n${line}\n`, 10n, 1000n)
  t.equal(run.requestsPerSecond, 15_000.5)
  t.same([run.non2xx, run.errors, run.wrongBodies, run.generatorCpuPercent], [11, 7, 2, 25])
  t.same(run.latencyMs, { p50: 1.5, p99: 5.999, max: 12 })
  t.throws(() => parseWrk('unable to connect', 0n, 0n), /wrk gave no result: unable to connect/)
  const text = (count: number, sum: number) =>
    `# TYPE nodejs_eventloop_lag_p99_seconds gauge\nnodejs_eventloop_lag_p99_seconds 0.0125\n` +
    `plant_store_group_commit_batch_size_count{store="sqlite"} ${count}\nplant_store_group_commit_batch_size_sum{store="sqlite"} ${sum}\n`
  const after = parseScrape(text(30, 1000))
  t.equal(after.lagP99Ms, 12.5)
  t.equal(meanBatch(parseScrape(text(10, 100)), after), 45, '900 plants in 20 transactions')
  t.equal(parseScrape('').lagP99Ms, undefined)
  t.equal(meanBatch(after, after), undefined, 'nothing written')
})

t.test('a new report keeps the hand-written part', async (t) => {
  const path = join(t.testdir(), 'benchmarks.md')
  writeReport(path, '# Benchmarks\n\nfirst\n')
  t.match(readFileSync(path, 'utf8'), `${HAND_WRITTEN}\n\n## Decisions\n`)
  writeFileSync(path, `# Benchmarks\n\nfirst\n${HAND_WRITTEN}\n\nkept\n`)
  writeReport(path, '# Benchmarks\n\nsecond\n')
  t.equal(readFileSync(path, 'utf8'), `# Benchmarks\n\nsecond\n\n${HAND_WRITTEN}\n\nkept\n`)
})
