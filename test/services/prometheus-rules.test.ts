/**
 * promtool on `deploy/prometheus/`: rules and scrape configuration valid, the rules' unit tests pass, and fail on a
 * changed alert. Each alert's cases are counted in unit/dashboard.test.ts.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { CommandError, run } from '../helpers/command.ts'
import { requires } from '../helpers/needs.ts'

const DIR = fileURLToPath(new URL('../../deploy/prometheus/', import.meta.url))
const RULES = 'plant-store.rules.yml'
const TESTS = 'plant-store.rules.test.yml'
const promtool = (args: string[], cwd = DIR) =>
  run('promtool', args, { cwd, timeoutMs: 120_000, install: 'apt-get install prometheus' })
const needs = requires('promtool')

for (const [name, args, ...expected] of [
  ['check rules: the rules are valid', ['check', 'rules', RULES], /SUCCESS: \d+ rules found/],
  [
    'check config: the scrape configuration and the rule file it names are valid',
    ['check', 'config', 'prometheus.yml'],
    /SUCCESS: 1 rule files found/,
    /is valid prometheus config file syntax/,
  ],
  ['test rules: every case passes', ['test', 'rules', TESTS], /SUCCESS/],
] as const)
  t.test(`promtool ${name}`, needs, async (t) => {
    const { stdout } = await promtool([...args])
    for (const pattern of expected) t.match(stdout, pattern)
    t.notMatch(stdout, /FAILED/)
  })

t.test(
  'the unit tests fail on rules that wait longer than they say (the store alert after 5 minutes)',
  needs,
  async (t) => {
    const dir = t.testdir()
    const rules = readFileSync(join(DIR, RULES), 'utf8')
    const alert = /- alert: PlantStoreStoreUnavailable\n[^]*?\n {8}for: 1m\n/.exec(rules)
    t.ok(alert, 'the store alert waits 1 m')
    writeFileSync(join(dir, RULES), rules.replace(alert![0], alert![0].replace('for: 1m', 'for: 5m')))
    copyFileSync(join(DIR, TESTS), join(dir, TESTS))
    const failure = await promtool(['test', 'rules', TESTS], dir).catch((error: unknown) => error as CommandError)
    t.type(failure, CommandError, 'promtool test rules fails')
    t.match(`${failure.stdout}${failure.stderr}`, /FAILED[^]*alertname: PlantStoreStoreUnavailable/, 'naming the alert')
  },
)
