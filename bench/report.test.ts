/**
 * The arithmetic that decides the benchmark's verdicts (bench/report.ts): CPU per
 * request, the ratios to the ceilings, the fault count, each target's threshold, and
 * the figures read from wrk's result line.
 */
import t from 'tap'
import { type LoadSummary, parseWrk } from './load.js'
import { cpuPerRequest, faults, GOALS, okResponses, ratio, stolenShares, type TargetResult, verdict } from './report.js'

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

t.test('CPU per request: utime + stime over the run ÷ responses, in µs', async (t) => {
  t.same(cpuPerRequest({ user: 3, system: 1 }, 100_000), { user: 30, system: 10, total: 40 })
  t.equal(cpuPerRequest({ user: 3, system: 1 }, 0), undefined, 'no response, no figure')
  t.equal(cpuPerRequest(undefined, 100), undefined)
  t.equal(ratio(50, 40), 1.25)
  t.equal(ratio(50, 0), undefined)
  t.equal(ratio(undefined, 40), undefined)
})

// Ceiling: 40 µs per request (4 s of CPU for 100,000 requests); durable ceilings 30,000 and 10,000 req/s.
const ceilings: TargetResult[] = [
  { key: 'raw', title: 'ceiling', load: load(10_000), cpu: { user: 3, system: 1 } },
  { key: 'durable', title: 'SQLite ceiling', load: load(30_000) },
  { key: 'durable-pg', title: 'PostgreSQL ceiling', load: load(10_000) },
]

t.test('the CPU ratio: server CPU per durable create ÷ the ceiling’s, met up to 1.25', async (t) => {
  const cpuRatio = goal('server CPU per durable create')
  // 25,500 req/s for 10 s with 12.75 s of CPU: 50 µs per request, 1.25 × the ceiling's 40.
  const atLimit: TargetResult = { key: 'embedded', title: 'embedded', load: load(25_500), cpu: { user: 10, system: 2.75 }, storedRows: 255_000 }
  t.same(verdict(cpuRatio, 'embedded', [...ceilings, atLimit]), { measured: '1.25', met: true })
  const above: TargetResult = { ...atLimit, cpu: { user: 10, system: 2.8 } }
  t.same(verdict(cpuRatio, 'embedded', [...ceilings, above]), { measured: '1.25', met: false }, '50.2 µs: shown rounded, judged exactly')
  t.same(verdict(cpuRatio, 'embedded', [ceilings[1]!, atLimit]), { measured: 'n/a', met: undefined }, 'no ceiling, no verdict')
})

t.test('throughput: each store against its own durable ceiling, met from 0.85', async (t) => {
  const throughput = goal('req/s ÷ durable ceiling')
  const embedded: TargetResult = { key: 'embedded', title: 'embedded', load: load(25_500) }
  const postgres: TargetResult = { key: 'postgres', title: 'postgres', load: load(8_400) }
  const results = [...ceilings, embedded, postgres]
  t.same(verdict(throughput, 'embedded', results), { measured: '0.85', met: true }, '25,500 ÷ 30,000 (SQLite)')
  t.same(verdict(throughput, 'postgres', results), { measured: '0.84', met: false }, '8,400 ÷ 10,000 (PostgreSQL)')
  t.same(verdict(throughput, 'postgres', [...ceilings.slice(0, 2), postgres]), { measured: 'n/a', met: undefined }, 'no PostgreSQL ceiling, no verdict')
})

t.test('latency, ready time and memory: strict upper bounds', async (t) => {
  const at = (overrides: Partial<TargetResult>, p99: number): TargetResult[] => [
    ...ceilings,
    { key: 'embedded', title: 'embedded', load: load(1, { latencyMs: { p50: 1, p99, max: 9, mean: 1 } }), ...overrides },
  ]
  t.same(verdict(goal('p99'), 'embedded', at({}, 5.99)), { measured: '5.99', met: true })
  t.same(verdict(goal('p99'), 'embedded', at({}, 6)), { measured: '6.00', met: false })
  t.same(verdict(goal('ready'), 'embedded', at({ readyMs: 299.4 }, 1)), { measured: '299', met: true })
  t.same(verdict(goal('ready'), 'embedded', at({ readyMs: 300 }, 1)), { measured: '300', met: false })
  t.same(verdict(goal('peak RSS'), 'embedded', at({ peakRssMb: 99.94 }, 1)), { measured: '99.9', met: true })
  t.same(verdict(goal('peak RSS'), 'embedded', at({ peakRssMb: 100 }, 1)), { measured: '100.0', met: false })
  t.same(verdict(goal('peak RSS'), 'postgres', at({}, 1)), { measured: 'n/a', met: undefined }, 'a target not run')
})

t.test('faults: errors, non-2xx, wrong bodies and 200s whose plant is not stored', async (t) => {
  const run = load(100, { errors: 1, non2xx: 2, wrongBodies: 3, statuses: { '200': 990, '201': 5, '503': 2 } })
  t.equal(okResponses(run), 995)
  t.equal(faults({ key: 'embedded', title: 'embedded', load: run, storedRows: 990 }), 1 + 2 + 3 + 5)
  t.equal(faults({ key: 'embedded', title: 'embedded', load: run, storedRows: 1010 }), 6, 'rows of requests sent but not answered in time are no fault')
  t.equal(faults({ key: 'unstored', title: 'ablation', load: run }), 6, 'nothing to count where nothing is stored')
  t.equal(faults({ key: 'embedded', title: 'embedded', notRun: 'failed' }), undefined)
  t.same(verdict(goal('errors'), 'embedded', [{ key: 'embedded', title: 'embedded', load: load(100), storedRows: 1000 }]), { measured: '0', met: true })
  t.same(verdict(goal('errors'), 'embedded', [{ key: 'embedded', title: 'embedded', load: load(100), storedRows: 999 }]), { measured: '1', met: false })
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
