/**
 * The arithmetic of the benchmark's report (bench/report.ts): CPU per request, the
 * service against the design floor and raw ceiling of the same round (plain figures),
 * the A/B verdicts (working tree against a baseline, paired within each round), the
 * median and range over rounds, the fault count summed over every target and round,
 * the round the report shows, the order of a round's targets, the figures read from
 * wrk's result line, and the parts a new report keeps from the previous one.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { type LoadSummary, parseWrk } from './load.ts'
import {
  AB_FIGURES,
  abVerdict,
  correctness,
  cpuPerRequest,
  DEFAULT_TARGETS,
  faults,
  FLOOR_FIGURES,
  HAND_WRITTEN,
  medianRound,
  okResponses,
  overRounds,
  ratio,
  renderResults,
  roundOrder,
  type Rounds,
  type RunSettings,
  spread,
  stolenShares,
  TARGET_KEYS,
  type TargetKey,
  type TargetResult,
  writeReport,
} from './report.ts'

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

/** A figure against the floor or ceiling, of the embedded store, over `rounds`. */
const againstFloor = (start: string, rounds: Rounds, key: TargetKey = 'embedded') => {
  const figure = FLOOR_FIGURES.find((each) => each.figure.startsWith(start))!
  return overRounds(figure.measure, figure.format, key, rounds)
}
/** An A/B verdict over `rounds`. */
const ab = (start: string, rounds: Rounds) =>
  abVerdict(
    AB_FIGURES.find((each) => each.figure.startsWith(start))!,
    rounds,
  )

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
  return {
    key,
    title: key,
    load: run,
    warmupP99Ms: warmupP99,
    cpu: { user: cpuUs, system: 0 },
    peakRssMb,
    readyMs,
    ...(storedRows === undefined ? {} : { storedRows }),
  }
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
  return [
    measured('raw', { readyMs: 200 }),
    measured('floor', floor),
    ...(service === undefined ? [] : [measured('embedded', service)]),
  ]
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

t.test(
  'against the design floor and the raw ceiling: plain figures of each round, their median and range',
  async (t) => {
    t.equal(
      againstFloor('server CPU per request ÷ design', [round({ cpuUs: 46 })]),
      '1.15 (1.15–1.15)',
      '46 ÷ 40 µs, no verdict',
    )
    t.equal(
      againstFloor('server CPU per request ÷ raw', [round({ cpuUs: 80 })]),
      '2.00 (2.00–2.00)',
      '80 ÷ the ceiling’s 40 µs',
    )
    t.equal(againstFloor('p99 latency ÷', [round({ p99: 6 })]), '1.50 (1.50–1.50)', '6 ÷ 4 ms')
    t.equal(againstFloor('peak RSS', [round({ peakRssMb: 120 })]), '+20.0 (+20.0–+20.0)', '120 − 100 MB')
    t.equal(againstFloor('peak RSS', [round({ peakRssMb: 90 })]), '−10.0 (−10.0–−10.0)', 'below the floor')
    t.equal(againstFloor('ready on existing data ÷', [round({ readyMs: 800 })]), '4.00 (4.00–4.00)', '800 ÷ 200 ms')
    t.equal(againstFloor('ready on existing data −', [round({ readyMs: 600 })]), '+100 (+100–+100)', '600 − 500 ms')
  },
)

t.test(
  'each round’s service is compared with the design floor of that same round; the median of the rounds is shown',
  async (t) => {
    // Crossed, 40 ÷ 80 and 96 ÷ 40 would be 0.50 and 2.40.
    const cpu = [round({ cpuUs: 40 }, { cpuUs: 40 }), round({ cpuUs: 96 }, { cpuUs: 80 })]
    t.equal(
      againstFloor('server CPU per request ÷ design', cpu),
      '1.10 (1.00–1.20)',
      '40 ÷ 40 and 96 ÷ 80: of two, the mean',
    )
    const rss = [
      round({ peakRssMb: 110 }, { peakRssMb: 100 }),
      round({ peakRssMb: 180 }, { peakRssMb: 150 }),
      round({ peakRssMb: 205 }, { peakRssMb: 200 }),
    ]
    t.equal(againstFloor('peak RSS', rss), '+10.0 (+5.0–+30.0)', '+10, +30, +5 MB: of three, the middle one')
  },
)

t.test('a round without the design floor or the service gives no figure', async (t) => {
  const withoutFloor = (service: Figures) => round(service).filter((result) => result.key !== 'floor')
  const floorFailed = (service: Figures) =>
    round(service).map((result) =>
      result.key === 'floor' ? { key: result.key, title: result.title, notRun: 'failed: exited' } : result,
    )
  t.equal(againstFloor('server CPU per request ÷ design', [withoutFloor({ cpuUs: 46 })]), 'n/a')
  t.equal(againstFloor('peak RSS', [floorFailed({}), floorFailed({})]), 'n/a', 'the floor failed in every round')
  t.equal(
    againstFloor('ready on existing data ÷', [round({}).filter((result) => result.key !== 'raw')]),
    'n/a',
    'no raw ceiling',
  )
  t.equal(
    againstFloor('server CPU per request ÷ design', [round({ cpuUs: 46 })], 'postgres'),
    'n/a',
    'the service not run',
  )
  t.equal(
    againstFloor('server CPU per request ÷ design', [withoutFloor({ cpuUs: 80 }), round({ cpuUs: 44 })]),
    '1.10 (1.10–1.10; 1 of 2 rounds)',
    'the round with a floor counts alone',
  )
})

/** One round of an A/B run: the working tree's service and the baseline's. */
function abRound(tree: Figures | undefined, baseline: Figures | undefined): TargetResult[] {
  return [
    ...(tree === undefined ? [] : [measured('embedded', tree)]),
    ...(baseline === undefined ? [] : [measured('baseline', baseline)]),
  ]
}

t.test('A/B: CPU ≤ 1.10 ×, p99 ≤ 1.25 ×, peak RSS ≤ +15 MB, ready ≤ +150 ms, judged exactly', async (t) => {
  t.same(
    ab('server CPU', [abRound({ cpuUs: 44 }, { cpuUs: 40 })]),
    { perRound: [1.1], measured: '1.10 (1.10–1.10)', met: true },
    '44 ÷ 40 µs',
  )
  t.equal(ab('server CPU', [abRound({ cpuUs: 44.01 }, { cpuUs: 40 })]).met, false, 'shown 1.10, judged exactly')
  t.equal(ab('p99', [abRound({ p99: 5 }, { p99: 4 })]).met, true, '5 ÷ 4 ms')
  t.equal(ab('p99', [abRound({ p99: 5.01 }, { p99: 4 })]).met, false)
  t.same(ab('peak RSS', [abRound({ peakRssMb: 115 }, { peakRssMb: 100 })]), {
    perRound: [15],
    measured: '+15.0 (+15.0–+15.0)',
    met: true,
  })
  t.equal(ab('peak RSS', [abRound({ peakRssMb: 115.01 }, { peakRssMb: 100 })]).met, false)
  t.same(ab('ready', [abRound({ readyMs: 650 }, { readyMs: 500 })]), {
    perRound: [150],
    measured: '+150 (+150–+150)',
    met: true,
  })
  t.equal(ab('ready', [abRound({ readyMs: 650.5 }, { readyMs: 500 })]).met, false)
  t.equal(
    ab('ready', [abRound({ readyMs: 300 }, { readyMs: 500 })]).measured,
    '−200 (−200–−200)',
    'faster than the baseline',
  )
})

t.test(
  'A/B: each round’s working tree against the baseline of that same round, then the median of the rounds',
  async (t) => {
    // Pooled, the medians would be 60 ÷ 60 = 1.00; round by round the tree is 1.20 × in two rounds of three.
    const rounds = [
      abRound({ cpuUs: 48 }, { cpuUs: 40 }),
      abRound({ cpuUs: 60 }, { cpuUs: 60 }),
      abRound({ cpuUs: 96 }, { cpuUs: 80 }),
    ]
    t.same(ab('server CPU', rounds), { perRound: [1.2, 1, 1.2], measured: '1.20 (1.00–1.20)', met: false })
    const even = [abRound({ cpuUs: 40 }, { cpuUs: 40 }), abRound({ cpuUs: 48 }, { cpuUs: 40 })]
    t.equal(ab('server CPU', even).measured, '1.10 (1.00–1.20)', 'of two rounds, the mean of both')
    t.equal(ab('server CPU', even).met, true)
  },
)

t.test('A/B: a round without either gives no figure; none at all is not measured', async (t) => {
  const rounds = [
    abRound({ cpuUs: 44 }, { cpuUs: 40 }),
    abRound({ cpuUs: 44 }, undefined),
    abRound(undefined, { cpuUs: 40 }),
  ]
  t.same(ab('server CPU', rounds), {
    perRound: [1.1, undefined, undefined],
    measured: '1.10 (1.10–1.10; 1 of 3 rounds)',
    met: true,
  })
  t.same(ab('server CPU', [abRound({}, undefined)]), { perRound: [undefined], measured: 'n/a', met: undefined })
  const failed: TargetResult = { key: 'baseline', title: 'baseline', notRun: 'failed: exited' }
  t.same(ab('peak RSS', [[measured('embedded'), failed]]).met, undefined, 'the baseline failed')
})

t.test(
  'the targets: baseline only when asked for; it and the working tree swap places every other round',
  async (t) => {
    t.notOk(DEFAULT_TARGETS.includes('baseline'))
    t.equal(DEFAULT_TARGETS.length, TARGET_KEYS.length - 1)
    const ab = new Set<TargetKey>(['embedded', 'baseline', 'floor'])
    t.same(roundOrder(1, ab), ['floor', 'embedded', 'baseline'])
    t.same(roundOrder(2, ab), ['floor', 'baseline', 'embedded'])
    t.same(roundOrder(3, ab), ['floor', 'embedded', 'baseline'])
    t.same(
      roundOrder(2, new Set<TargetKey>(['raw', 'embedded', 'postgres'])),
      ['raw', 'embedded', 'postgres'],
      'no baseline, no swap',
    )
  },
)

t.test('faults: errors, non-2xx, wrong bodies and 200s whose plant is not stored', async (t) => {
  const run = load(100, { errors: 1, non2xx: 2, wrongBodies: 3, statuses: { '200': 990, '201': 5, '503': 2 } })
  t.equal(okResponses(run), 995)
  t.equal(faults({ key: 'embedded', title: 'embedded', load: run, storedRows: 990 }), 1 + 2 + 3 + 5)
  t.equal(
    faults({ key: 'embedded', title: 'embedded', load: run, storedRows: 1010 }),
    6,
    'rows of requests sent but not answered in time are no fault',
  )
  t.equal(faults({ key: 'unstored', title: 'ablation', load: run }), 6, 'nothing to count where nothing is stored')
  t.equal(faults({ key: 'embedded', title: 'embedded', notRun: 'failed' }), undefined)
  t.equal(
    faults({ key: 'baseline', title: 'baseline', load: load(100), exited: 'code 1: TypeError' }),
    1,
    'a server that exited unasked: one fault',
  )
  const report = renderResults(new Date(0), SETTINGS, [
    [measured('embedded'), { ...measured('baseline'), exited: 'code 1: a | b' }],
  ])
  t.match(report, '**baseline exited unasked** in round 1 (a fault below; round 1: code 1: a \\| b).')
  t.match(report, '| 0 | 1 (baseline: 1): **not met** |')
})

t.test('correctness: faults summed over every target and every round, not a median', async (t) => {
  const unstored = (count: number): Figures => ({ storedRows: 1_000_000 - count })
  t.same(correctness([round(unstored(0)), round(unstored(0)), round(unstored(0))]), { total: 0, byTarget: [], runs: 9 })
  t.same(
    correctness([round(unstored(0)), round(unstored(0)), round(unstored(2))]),
    { total: 2, byTarget: [{ title: 'embedded', faults: 2 }], runs: 9 },
    'the median round had none',
  )
  const floorErrors = round(unstored(1)).map((result) =>
    result.key === 'floor' ? { ...result, load: { ...result.load!, errors: 3 } } : result,
  )
  t.same(
    correctness([floorErrors, round(undefined)]),
    {
      total: 4,
      byTarget: [
        { title: 'floor', faults: 3 },
        { title: 'embedded', faults: 1 },
      ],
      runs: 5,
    },
    'every target counts',
  )
  t.equal(correctness([[{ key: 'embedded', title: 'embedded', notRun: 'failed' }]]), undefined, 'nothing measured')
  const report = renderResults(new Date(0), SETTINGS, [round(unstored(0)), round(unstored(5))])
  t.match(report, '| errors, non-2xx, wrong bodies, 200s not stored | 0 | 5 (embedded: 5): **not met** |')
})

t.test('the warm-up’s p99: reported against the design floor’s of the same round', async (t) => {
  const report = renderResults(new Date(0), SETTINGS, [
    round({ warmupP99: 30 }, { warmupP99: 10 }),
    round({ warmupP99: 12 }, { warmupP99: 8 }),
    round({ warmupP99: 40 }, { warmupP99: 20 }),
  ])
  t.match(report, "| p99 latency in the warm-up ÷ design floor's | 2.00 (1.50–3.00) |", 'ratios 3, 1.5, 2')
  t.match(
    report,
    /^\| embedded \| 3 of 3 \| [^|]+ \| [^|]+ \| 30\.0 \(12\.0–40\.0\) \|/m,
    'the Rounds table’s warm-up column',
  )
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

t.test(
  'the report: each target’s median round, the spread over the rounds, the figures against the floor, no targets',
  async (t) => {
    const report = renderResults(new Date(0), SETTINGS, [
      round({ cpuUs: 44 }),
      round({ cpuUs: 52 }),
      round({ cpuUs: 46 }),
    ])
    t.match(report, /^- Rounds: 3, interleaved/m)
    t.match(report, /default log level \(`info`/)
    t.match(report, "`MALLOC_ARENA_MAX=1 node --max-semi-space-size=4 dist/service/server.js` (the image's command)")
    t.notMatch(report, /LOG_LEVEL/)
    t.match(
      report,
      /^\| embedded \| 3 \| 100,000 \| .* \| 46\.0 \(46\.0 \+ 0\.0\) \|/m,
      'the Results row is the round of the median CPU',
    )
    t.match(
      report,
      '| embedded | 3 of 3 | 46.0 (44.0–52.0) | 4.0 (4.0–4.0) | n/a | 100.0 (100.0–100.0) | 500 (500–500) | 100,000 (100,000–100,000) | n/a |',
    )
    t.match(report, '| figure | embedded |\n', 'one column per service target measured')
    t.match(report, "| server CPU per request ÷ design floor's | 1.15 (1.10–1.30) |")
    t.notMatch(report, "| p99 latency in the warm-up ÷ design floor's", 'no warm-up, no figure: the row left out')
    t.notMatch(report, "| instructions per request ÷ design floor's", 'no instructions counted')
    t.match(report, '| errors, non-2xx, wrong bodies, 200s not stored | 0 | 0: met |')
    t.notMatch(report, /≤|\bnot met\b|## Targets|## Working tree/, 'no targets, no verdicts, no A/B without a baseline')
  },
)

t.test('the report of an A/B run: the comparison with its verdicts and each round’s figure', async (t) => {
  const rounds = [
    abRound({ cpuUs: 44, p99: 4, peakRssMb: 120 }, { cpuUs: 40 }),
    abRound({ cpuUs: 50, readyMs: 700 }, { cpuUs: 40 }),
    abRound({ cpuUs: 40 }, { cpuUs: 40 }),
  ]
  const report = renderResults(
    new Date(0),
    { ...SETTINGS, baseline: { ref: 'fa9b7d2', how: 'commit `fa9b7d2`, linked' } },
    rounds,
  )
  t.match(report, '## Working tree against `fa9b7d2`')
  t.match(report, /^- Baseline: `fa9b7d2`, commit `fa9b7d2`, linked; started exactly as/m)
  t.match(
    report,
    '| server CPU per create, working tree ÷ baseline | ≤ 1.10 × | 1.10 (1.00–1.25) | 1.10, 1.25, 1.00 | met |',
  )
  t.match(report, '| peak RSS, working tree − baseline, MB | ≤ +15 MB | 0.0 (0.0–+20.0) | +20.0, 0.0, 0.0 | met |')
  t.match(report, '| ready on existing data, working tree − baseline, ms | ≤ +150 ms | 0 (0–+200) | 0, +200, 0 | met |')
  t.notMatch(report, 'Against the design floor', 'no floor ran: no such section')
  t.match(report, /swap places every other round/)
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
  t.throws(
    () => parseWrk('unable to connect to 127.0.0.1:1 Connection refused', 1, 0n, 0n),
    /wrk gave no result: unable to connect/,
  )
})

t.test("stolen CPU time: the steal column over each CPU's time, guest time not counted twice", async (t) => {
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

t.test(
  'a new report keeps the hand-written part and, when no soak ran, the previous soak; a first report gets a placeholder',
  async (t) => {
    const path = join(t.testdir(), 'benchmarks.md')
    writeReport(path, '# Benchmarks\n\nfirst run\n', undefined)
    const first = readFileSync(path, 'utf8')
    t.match(first, /No soak run yet/)
    t.match(first, `${HAND_WRITTEN}\n\n## What it measures, and why\n\nNot written yet.\n`)

    const handWritten = `${HAND_WRITTEN}\n\n## Decisions\n\nOne log line per request.\n`
    writeFileSync(
      path,
      first.replace(/<!-- Hand-written[^]*$/, handWritten).replace(/No soak run yet[^\n]*/, 'soak of the last run'),
    )
    writeReport(path, '# Benchmarks\n\nsecond run\n', undefined)
    const second = readFileSync(path, 'utf8')
    t.match(second, /^# Benchmarks\n\nsecond run\n/, 'the generated part is new')
    t.match(second, /<!-- soak:start -->\nsoak of the last run\n<!-- soak:end -->/, 'the previous soak, kept')
    t.ok(second.endsWith(handWritten), 'the hand-written part, kept as it was')

    writeReport(path, '# Benchmarks\n\nthird run\n', "this run's soak")
    t.match(
      readFileSync(path, 'utf8'),
      /<!-- soak:start -->\nthis run's soak\n<!-- soak:end -->/,
      'a new soak replaces it',
    )
  },
)
