/**
 * The benchmark's chart, beside the report (`docs/benchmarks.svg`): server CPU per create and p99 latency of each
 * target, a point at the median over the rounds and a rule from the lowest to the highest, coloured by side
 * (ceilings and floor, the working tree, the baseline of an A/B run). A Vega-Lite spec, compiled to Vega and
 * rendered headless by `View#toSVG()` (no canvas needed for SVG).
 *
 * @module
 */
import { parse, View } from 'vega'
import { compile, type TopLevelSpec } from 'vega-lite'
import { type FigureKey, FIGURES, measuredTargets, overRounds, type Rounds, type TargetKey } from './report.ts'

/** One rule and point of the chart. */
export interface ChartRow {
  readonly target: string
  readonly side: string
  readonly figure: string
  readonly median: number
  readonly min: number
  readonly max: number
}

const CHARTED: readonly FigureKey[] = ['cpu', 'p99']
/** The sides, each always in the same colour. */
const SIDES = ['ceiling or floor', 'working tree', 'baseline'] as const
const side = (key: TargetKey) => SIDES[key === 'baseline' ? 2 : key === 'embedded' || key === 'postgres' ? 1 : 0]

/** The chart's rows: each measured target's median and range over the rounds, per charted figure. */
export function chartRows(rounds: Rounds): ChartRow[] {
  return measuredTargets(rounds).flatMap(({ key, title }) =>
    CHARTED.flatMap((figure) => {
      const s = overRounds(rounds, key, figure)
      const target = title.replace(/`/g, '')
      return s === undefined ? [] : [{ target, side: side(key), figure: FIGURES[figure].heading, ...s }]
    }),
  )
}

/**
 * Renders the rows as an SVG document.
 * @param title - the chart's title (the run's date and rounds).
 */
export async function renderChart(rows: readonly ChartRow[], title: string): Promise<string> {
  const x = { type: 'quantitative', title: null, scale: { zero: true } } as const
  const spec: TopLevelSpec = {
    title,
    data: { values: [...rows] },
    facet: { column: { field: 'figure', title: null, sort: CHARTED.map((key) => FIGURES[key].heading) } },
    spec: {
      width: 260,
      encoding: {
        y: { field: 'target', type: 'nominal', title: null, sort: null, axis: { labelLimit: 0 } },
        color: { field: 'side', type: 'nominal', title: null, scale: { domain: [...SIDES] } },
      },
      layer: [
        { mark: 'rule', encoding: { x: { field: 'min', ...x }, x2: { field: 'max' } } },
        { mark: { type: 'point', filled: true, size: 60 }, encoding: { x: { field: 'median', ...x } } },
      ],
    },
    resolve: { scale: { x: 'independent' } },
    config: { legend: { orient: 'bottom' } },
  }
  const view = new View(parse(compile(spec).spec), { renderer: 'none' })
  try {
    return await view.toSVG()
  } finally {
    view.finalize()
  }
}
