/** The benchmark's chart (bench/chart.ts) is drawn from a report's figures, without running any load. */
import t from 'tap'
import { chartRows, renderChart } from './chart.ts'
import type { TargetResult } from './report.ts'

const result = (key: TargetResult['key'], title: string, cpuS: number, p99: number): TargetResult => ({
  key,
  title,
  cpu: { user: cpuS, system: 0 },
  load: {
    requestsPerSecond: 1000,
    responses: 1_000_000,
    latencyMs: { p50: 1, p99, max: 9 },
    errors: 0,
    non2xx: 0,
    wrongBodies: 0,
    statuses: {},
    generatorCpuPercent: 10,
    firstId: 0n,
    idCount: 1n,
  },
})
const rounds = [20, 60, 40].map((cpu, round) => [
  result('raw', 'raw `node:http` (ceiling)', 19, 3),
  result('embedded', 'service, embedded store', cpu, 10 + round),
  result('baseline', 'service at `b2225c4`, embedded store', 70, 30),
  { key: 'postgres', title: 'service, PostgreSQL', notRun: 'unreachable' } as const,
])

t.test('one range per target and figure: the median and the lowest and highest of the rounds', async (t) => {
  const rows = chartRows(rounds)
  t.equal(rows.length, 6, 'three targets measured, two figures each; the target not run is left out')
  t.same(
    rows.find((row) => row.target === 'service, embedded store' && row.figure.startsWith('server CPU')),
    {
      target: 'service, embedded store',
      side: 'working tree',
      figure: 'server CPU µs per request',
      median: 40,
      min: 20,
      max: 60,
    },
  )
  t.same([...new Set(rows.map((row) => row.side))], ['ceiling or floor', 'working tree', 'baseline'])
})

t.test('the SVG names each target and draws one rule and one point per range', async (t) => {
  const svg = await renderChart(chartRows(rounds), 'a run')
  t.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
  for (const name of ['raw node:http (ceiling)', 'service, embedded store', 'service at b2225c4, embedded store'])
    t.ok(svg.includes(`>${name}</text>`), `${name} labelled`)
  t.equal(svg.match(/aria-roledescription="rule mark"/g)?.length, 6)
  t.equal(svg.match(/aria-roledescription="point"/g)?.length, 6)
  t.match(svg, 'min: 20; target: service, embedded store; max: 60', 'the CPU range of the rounds')
  t.notMatch(svg, 'PostgreSQL')
})
