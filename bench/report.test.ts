/**
 * The benchmark report (bench/report.ts): the figures it derives (ratios,
 * the time per request each target allows and what storing costs, the verdicts) and
 * what a regeneration keeps (the soak section, the hand-written part).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { LoadSummary } from './load.js'
import { HAND_WRITTEN, renderResults, type RunSettings, SOAK_END, SOAK_START, type TargetResult, writeReport } from './report.js'

const settings: RunSettings = {
  durationS: 10,
  warmupS: 3,
  connections: 50,
  pinning: 'none',
  idBase: 2n ** 61n,
  databaseUrl: 'postgres://postgres@127.0.0.1:5432/test',
  revision: 'commit `abc1234`',
  profiled: false,
  loadAverage: [0.5, 1.25],
}

function load(requestsPerSecond: number, overrides: Partial<LoadSummary> = {}): LoadSummary {
  return {
    requestsPerSecond,
    responses: requestsPerSecond * 10,
    latencyMs: { p50: 1, p99: 5, max: 20, mean: 1.5 },
    errors: 0,
    non2xx: 0,
    wrongBodies: 0,
    statuses: { '200': requestsPerSecond * 10 },
    generatorCpuPercent: 60,
    serverCpuPercent: 90,
    ...overrides,
  }
}

const ceiling = 50_000
const results: TargetResult[] = [
  { key: 'raw', title: 'ceiling', load: load(ceiling, { generatorCpuPercent: 100 }), readyRssMb: 45, peakRssMb: 66, readyMs: 40 },
  { key: 'durable', title: 'durable ceiling', load: load(35_000, { serverCpuPercent: undefined }), readyMs: 50 },
  { key: 'unstored', title: 'ablation', load: load(40_000), store: { transactions: 20_000, meanBatch: 20, meanTransactionMs: 0 }, readyMs: 700, readyAgainMs: 650 },
  {
    key: 'embedded',
    title: 'embedded',
    load: load(20_000, { latencyMs: { p50: 2, p99: 12, max: 30, mean: 2.5 }, non2xx: 3, wrongBodies: 1, statuses: { '200': 199_997, '503': 3 } }),
    readyRssMb: 110,
    peakRssMb: 160.25,
    readyMs: 800,
    readyAgainMs: 1200,
    store: { transactions: 7_000, meanBatch: 30.5, meanTransactionMs: 0.456 },
  },
  { key: 'postgres', title: 'postgres', notRun: 'PostgreSQL unreachable' },
]

t.test('ratios, the store table, the cost per request, and the verdicts', async (t) => {
  const text = renderResults(new Date('2026-11-21T08:00:00Z'), settings, results)
  const row = (title: string) => text.split('\n').find((line) => line.startsWith(`| ${title} |`))
  t.match(row('ceiling'), /^\| ceiling \| 50,000 \| 1\.00 \| 1 \| 5 \| 20 \| 0 \/ 0 \| 45\.0 → 66\.0 \| 40 \| n\/a \| 90 \/ 100 \|$/)
  t.match(row('durable ceiling'), /\| 35,000 \| 0\.70 \|.*\| n\/a \/ 60 \|$/, 'a server CPU that was not read shows as n/a')
  t.match(row('embedded'), /\| 20,000 \| 0\.40 \| 2 \| 12 \| 30 \| 0 \/ 3 \(503: 3, 1 wrong bodies\) \| 110\.0 → 160\.3 \| 800 \| 1,200 \|/)
  t.match(row('postgres'), /^\| postgres \| not run: PostgreSQL unreachable \|/)
  t.match(text, 'The load generator saturated its core against ceiling: that figure is a lower bound of what the server can do, so every ratio to the ceiling is optimistic.')
  t.match(text, '| embedded | 7,000 | 700 | 30.5 | 0.46 |', 'the store table, in ms with two decimals under 10')
  t.notMatch(text, '| ablation | 20,000 |', 'the ablation writes nothing: no store row')
  // 0.75 × 50,000 req/s allows 26.7 µs; the ablation takes 25 µs; the store 50 µs.
  t.match(text, '| embedded | 0.75 | 26.7 | 25.0 | 1.7 | 50.0 | 25.0 |')
  t.notMatch(text, /\| postgres \| 0\.5 \|/, 'no cost row for a target not run')
  t.match(text, 'Against the durable ceiling (35,000 req/s, a raw server that commits each plant to SQLite before its 200): embedded 0.57.')
  t.match(text, '| embedded: req/s ÷ ceiling | ≥ 0.75 | 0.40 | **FAIL** |')
  t.match(text, '| embedded: p99 latency | < 10 ms | 12 | **FAIL** |')
  t.match(text, '| embedded: peak RSS | < 150 MB | 160.3 | **FAIL** |')
  t.match(text, '| embedded: ready on an existing data directory | < 1,000 ms | 1,200 | **FAIL** |')
  t.match(text, '| embedded: errors + non-2xx + wrong bodies | 0 | 4 | **FAIL** |')
  t.match(text, '| postgres: req/s ÷ ceiling | ≥ 0.5 | not run | not measured |')
  t.notMatch(text, /\| (ablation|durable ceiling): req\/s/, 'the references have no targets')
  t.match(text, '| load average (1 min), start → end of the targets | 0.50 → 1.25 |')
  t.match(text, '- CPU profiler: off.')
})

t.test('a passing target, a profiled run, and no ceiling to divide by', async (t) => {
  const passing: TargetResult = {
    key: 'embedded',
    title: 'embedded',
    load: load(40_000, { latencyMs: { p50: 0.5, p99: 4, max: 9.5, mean: 1 }, generatorCpuPercent: 97 }),
    peakRssMb: 140,
    readyAgainMs: 700,
  }
  const text = renderResults(new Date(), { ...settings, profiled: true }, [{ key: 'raw', title: 'ceiling' }, passing])
  t.match(text, /^\| ceiling \| not run: unknown \|/m, 'a target without a reason still says it did not run')
  t.match(text, 'The load generator saturated its core against embedded: that figure is a lower bound of what the server can do.\n')
  t.match(text, '| embedded | 40,000 | n/a | 0.50 | 4 | 9.50 |', 'no ratio without a ceiling; sub-10 ms fractions with two decimals')
  t.match(text, '| embedded: req/s ÷ ceiling | ≥ 0.75 | n/a | not measured |')
  t.match(text, '| embedded: p99 latency | < 10 ms | 4 | **pass** |')
  t.match(text, '**on** (`node --cpu-prof`)')
  t.notMatch(text, 'Server time per request', 'no cost table without the ceiling and the ablation')
  t.notMatch(text, 'Store transactions', 'no store table without store figures')
})

t.test('the cost table needs the ablation; the durable line needs the durable ceiling', async (t) => {
  const withoutReferences = renderResults(new Date(), settings, [results[0]!, results[3]!])
  t.notMatch(withoutReferences, 'Server time per request')
  t.notMatch(withoutReferences, 'Against the durable ceiling')
  const durableOnly = renderResults(new Date(), settings, [{ key: 'raw', title: 'ceiling', notRun: 'failed' }, results[1]!, results[3]!])
  t.match(durableOnly, 'Against the durable ceiling (35,000 req/s')
  t.notMatch(durableOnly, 'Server time per request')
  const stalled = renderResults(new Date(), settings, [results[0]!, results[2]!, { ...results[3]!, load: load(0) }])
  t.match(stalled, 'Server time per request')
  t.notMatch(stalled, /\| embedded \| 0\.75 \|/, 'no cost row for a target that answered nothing')
})

t.test('writing the report keeps the hand-written part, and the soak section when no soak ran', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'docs', 'benchmarks.md')
  writeReport(path, '# Benchmarks\n\ngenerated one\n', undefined)
  const first = readFileSync(path, 'utf8')
  t.match(first, 'No soak run yet')
  t.match(first, `${HAND_WRITTEN}\n\n## Profile\n\nNot written yet`)

  writeFileSync(path, first.replace('Not written yet', 'Our own findings'))
  writeReport(path, '# Benchmarks\n\ngenerated two\n', 'Soak: 300 s, flat.')
  const second = readFileSync(path, 'utf8')
  t.match(second, 'generated two')
  t.notMatch(second, 'generated one')
  t.match(second, `${SOAK_START}\nSoak: 300 s, flat.\n${SOAK_END}`)
  t.match(second, 'Our own findings', 'the hand-written part is kept')

  writeReport(path, '# Benchmarks\n\ngenerated three\n', undefined)
  const third = readFileSync(path, 'utf8')
  t.match(third, `${SOAK_START}\nSoak: 300 s, flat.\n${SOAK_END}`, 'a run without a soak keeps the last one')
  t.match(third, 'Our own findings')
})
