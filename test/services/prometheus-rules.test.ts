/**
 * `deploy/prometheus/` with Prometheus's own tool, promtool (Debian's `prometheus` package): the rules and the scrape
 * configuration check, and the rules' unit tests (`plant-store.rules.test.yml`) pass; a copy of the rules with one
 * alert changed fails them. Each alert's firing and silent cases are counted in `test/unit/dashboard.test.ts`.
 *
 * @module
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
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

t.test('promtool check rules: the rules are valid', needs, async (t) => {
  const { stdout } = await promtool(['check', 'rules', RULES])
  t.match(stdout, /SUCCESS: \d+ rules found/)
})

t.test('promtool check config: the scrape configuration and the rule file it names are valid', needs, async (t) => {
  const { stdout } = await promtool(['check', 'config', 'prometheus.yml'])
  t.match(stdout, /SUCCESS: 1 rule files found/)
  t.match(stdout, /is valid prometheus config file syntax/)
})

t.test('promtool test rules: every case passes', needs, async (t) => {
  const { stdout } = await promtool(['test', 'rules', TESTS])
  t.match(stdout, /SUCCESS/)
  t.notMatch(stdout, /FAILED/)
})

t.test(
  'the unit tests fail on rules that wait longer than they say (the store alert after 5 minutes)',
  needs,
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-rules-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const rules = readFileSync(join(DIR, RULES), 'utf8')
    const alert = /- alert: PlantStoreStoreUnavailable\n[^]*?\n {8}for: 1m\n/.exec(rules)
    t.ok(alert, 'the store alert waits 1 m')
    writeFileSync(join(dir, RULES), rules.replace(alert![0], alert![0].replace('for: 1m', 'for: 5m')))
    copyFileSync(join(DIR, TESTS), join(dir, TESTS))
    const failure = await promtool(['test', 'rules', TESTS], dir).then(
      () => undefined,
      (error: unknown) => error as CommandError,
    )
    t.type(failure, CommandError, 'promtool test rules fails')
    t.match(
      `${failure?.stdout}${failure?.stderr}`,
      /FAILED[^]*alertname: PlantStoreStoreUnavailable/,
      'naming the alert',
    )
  },
)
