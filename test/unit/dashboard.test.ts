/**
 * The Grafana dashboard and Prometheus rules: each query parses and names only series the app exports, a rule records,
 * or `up`; each alert has promtool cases and a runbook line.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parser } from '@prometheus-io/lezer-promql'
import t from 'tap'
import { parse } from 'yaml'
import { build, JSON_HEADERS } from '../helpers/app.ts'

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8')

type Panel = { title: string; targets?: Array<{ expr: string; refId: string }> }
type Rule = { record?: string; alert?: string; expr: string }
type AlertTest = { alertname: string; exp_alerts: unknown[] }

const dashboard = JSON.parse(read('deploy/grafana/plant-store.json')) as { panels: Panel[] }
const rules = (
  parse(read('deploy/prometheus/plant-store.rules.yml')) as { groups: Array<{ rules: Rule[] }> }
).groups.flatMap((group) => group.rules)
const ruleTests = parse(read('deploy/prometheus/plant-store.rules.test.yml')) as {
  tests: Array<{ alert_rule_test?: AlertTest[] }>
}
const recorded = new Set(rules.flatMap((rule) => rule.record ?? []))
const alerts = rules.flatMap((rule) => rule.alert ?? [])

/** What a real app exports: series names, and the `le` values of each histogram. */
async function exported() {
  const app = await build(t)
  await app.inject({ method: 'POST', url: '/plants', headers: JSON_HEADERS, payload: { id: 1, name: 'Ficus' } })
  await app.inject({ url: '/health/ready' })
  const text = (await app.inject({ url: '/metrics' })).body
  const names = new Set<string>()
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`)
    else names.add(name!)
  }
  const buckets = new Map<string, Set<string>>()
  for (const [, name, le] of text.matchAll(/^(\w+)_bucket\{[^}]*\ble="([^"]+)"/gm))
    buckets.set(name!, (buckets.get(name!) ?? new Set()).add(le!))
  return { names, buckets }
}

/** Parses `expr`. @returns its selectors, and its syntax errors. */
function parsePromQL(expr: string) {
  const selectors: Array<{ metric: string; matchers: Map<string, string> }> = []
  const errors: string[] = []
  parser.parse(expr).iterate({
    enter: ({ node }) => {
      if (node.type.isError) errors.push(`at ${node.from}: "${expr.slice(node.from, node.to + 10)}"`)
      if (node.name !== 'VectorSelector') return
      const matchers = new Map<string, string>()
      for (const matcher of node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []) {
        const text = (child: { from: number; to: number } | null) =>
          child === null ? '' : expr.slice(child.from, child.to)
        matchers.set(text(matcher.getChild('LabelName')), JSON.parse(text(matcher.getChild('StringLiteral'))))
      }
      selectors.push({
        metric: expr.slice(node.getChild('Identifier')?.from ?? 0, node.getChild('Identifier')?.to),
        matchers,
      })
    },
  })
  return { selectors, errors }
}

/** Grafana's interval variables as a duration (`$instance` stays). */
const withIntervals = (expr: string) => expr.replaceAll(/\$__(rate_interval|interval|range)\b/g, '5m')

const queries = [
  ...dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({
      where: `panel "${panel.title}" ${target.refId}`,
      expr: withIntervals(target.expr),
    })),
  ),
  ...rules.map((rule) => ({ where: `rule ${rule.record ?? rule.alert}`, expr: rule.expr })),
]

t.test('every panel has a query, and every query parses as PromQL', async (t) => {
  for (const panel of dashboard.panels) t.ok(panel.targets?.length, `panel "${panel.title}" has a query`)
  t.ok(queries.length > 30, `${queries.length} queries`)
  for (const { where, expr } of queries) t.same(parsePromQL(expr).errors, [], `${where} parses`)
})

t.test('the grammar is a real check: a broken query does not parse', async (t) => {
  t.not(parsePromQL('sum(rate(http_request_duration_seconds_count[5m])').errors.length, 0, 'a missing parenthesis')
  t.not(parsePromQL('rate(up[$__rate_interval])').errors.length, 0, "Grafana's variable unreplaced")
})

t.test('queries name only series the service exports, the recording rules record, or up', async (t) => {
  const { names, buckets } = await exported()
  t.ok(names.has('http_request_duration_seconds_bucket') && names.has('plant_store_creates_total'))
  // `up`: Prometheus adds it to every target.
  const known = new Set([...names, ...recorded, 'up'])
  for (const { where, expr } of queries) {
    for (const { metric, matchers } of parsePromQL(expr).selectors) {
      t.ok(known.has(metric), `${where}: ${metric} is known`)
      const le = matchers.get('le')
      if (le !== undefined) {
        const histogram = metric.replace(/_bucket$/, '')
        t.ok(buckets.get(histogram)?.has(le), `${where}: ${histogram} has a bucket le="${le}"`)
      }
    }
  }
  t.notOk(known.has('plant_store_unknown_total'), 'an unknown name is not known')
})

t.test('the dashboard has the panels operators need', async (t) => {
  const metricsOf = (panel: Panel) =>
    (panel.targets ?? []).flatMap((target) => parsePromQL(withIntervals(target.expr)).selectors.map((s) => s.metric))
  const needs: Array<[string, RegExp]> = [
    ['request rate by status class', /^http_request_duration_seconds_count$/],
    ['latency quantiles from the histogram', /^http_request_duration_seconds_bucket$/],
    ['the availability SLO burn', /^job:plant_store_create_errors:/],
    ['the latency SLO burn', /^job:plant_store_create_slow:/],
    ['store transaction time', /^plant_store_store_transaction_seconds_bucket$/],
    ['group commit batch size', /^plant_store_group_commit_batch_size_/],
    ['the event loop delay', /^nodejs_eventloop_lag_/],
    ['the process memory', /^process_resident_memory_bytes$/],
  ]
  for (const [what, metric] of needs) {
    t.ok(
      dashboard.panels.some((panel) => metricsOf(panel).some((name) => metric.test(name))),
      what,
    )
  }
})

t.test('each alert has a firing and a silent case in the promtool tests, and a runbook line', async (t) => {
  const cases = ruleTests.tests.flatMap((test) => test.alert_rule_test ?? [])
  const alertsSection = /^## Alerts\n([^]*?)(?=^## )/m.exec(read('docs/operations.md'))?.[1] ?? ''
  t.ok(alerts.length >= 8, `${alerts.length} alerts`)
  for (const alert of alerts) {
    const mine = cases.filter((test) => test.alertname === alert)
    for (const fires of [true, false])
      t.ok(
        mine.some((test) => test.exp_alerts.length > 0 === fires),
        `${alert} ${fires ? 'fires' : 'is silent'}`,
      )
    t.match(alertsSection, `\`${alert}\``, `a runbook line for ${alert}`)
  }
})
