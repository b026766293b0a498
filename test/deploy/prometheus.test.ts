/**
 * The store alert through a real Prometheus (Debian's binary): two service processes on one PostgreSQL, reached through
 * a proxy that can cut it (`partition-proxy.ts`), behind the example gateway under load; Prometheus scrapes them with
 * the shipped rules as they are and a configuration generated from the shipped `prometheus.yml` (the replicas as
 * targets, scrape and evaluation every second). The database cut: clients get 503 with `Retry-After`, and
 * `PlantStoreStoreUnavailable` reaches `firing` within its `for:` plus one evaluation interval of going pending. The
 * database back: the alert resolves. The times seen are the test's comments.
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { postgresSchema, TOKEN } from '../helpers/app.ts'
import { countByStatus, startLoad } from '../helpers/create-load.ts'
import { freePort } from '../helpers/machine.ts'
import { startGateway } from '../helpers/nginx.ts'
import { partitionProxy } from '../helpers/partition-proxy.ts'
import { waitUntil } from '../helpers/podman.ts'
import { startService } from '../helpers/process.ts'

t.setTimeout(15 * 60_000)

const PROMETHEUS = '/usr/bin/prometheus'
const DIR = fileURLToPath(new URL('../../deploy/prometheus/', import.meta.url))
const ALERT = 'PlantStoreStoreUnavailable'
/** Scrape and evaluation interval of the test's configuration, s. */
const INTERVAL_S = 1
/** Concurrent clients through the gateway. */
const CLIENTS = 4

/** One alert of `GET /api/v1/alerts`. */
interface Alert {
  labels: Record<string, string>
  state: 'pending' | 'firing'
  activeAt: string
}
/** One alerting rule of `GET /api/v1/rules`. */
interface AlertingRule {
  name: string
  duration: number
  health: string
  lastError?: string
  state: 'inactive' | 'pending' | 'firing'
}

/** The shipped configuration with `targets` as plant-store's, every `INTERVAL_S`, and the shipped rules by path. */
function drillConfig(targets: string[]): string {
  const config = parse(readFileSync(join(DIR, 'prometheus.yml'), 'utf8')) as {
    global: Record<string, string>
    rule_files: string[]
    scrape_configs: Array<{ job_name: string; scrape_timeout?: string; static_configs: Array<{ targets: string[] }> }>
  }
  Object.assign(config.global, { scrape_interval: `${INTERVAL_S}s`, evaluation_interval: `${INTERVAL_S}s` })
  config.rule_files = config.rule_files.map((file) => join(DIR, file))
  const job = config.scrape_configs.find((job) => job.job_name === 'plant-store')!
  Object.assign(job, { scrape_timeout: `${INTERVAL_S}s`, static_configs: [{ targets }] })
  return stringify(config)
}

/**
 * Starts Prometheus with `config` on a free loopback port, storage in a temporary directory; stopped at teardown.
 * @returns its base URL once ready.
 */
async function startPrometheus(config: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-prometheus-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'prometheus.yml'), config)
  const port = await freePort()
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  child.on('error', (error) => (stderr += `${error.message} (apt-get install prometheus)`))
  const exited = once(child, 'close')
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  })
  const url = `http://127.0.0.1:${port}`
  await waitUntil('Prometheus to be ready', 60_000, async () => {
    if (child.exitCode !== null || stderr.includes('ENOENT')) throw new Error(`Prometheus did not start: ${stderr}`)
    return (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200
  })
  return url
}

const api = async <T>(prometheus: string, path: string): Promise<T> => {
  const response = await fetch(`${prometheus}${path}`)
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return ((await response.json()) as { data: T }).data
}
const storeAlert = async (prometheus: string) =>
  (await api<{ alerts: Alert[] }>(prometheus, '/api/v1/alerts')).alerts.find(
    (alert) => alert.labels.alertname === ALERT,
  )
const alertingRules = async (prometheus: string) =>
  (await api<{ groups: Array<{ rules: AlertingRule[] }> }>(prometheus, '/api/v1/rules?type=alert')).groups.flatMap(
    (group) => group.rules,
  )

const schema = await postgresSchema(t)
const database = await partitionProxy(t, schema.url)
const replicas = await Promise.all(
  [0, 1].map(() =>
    startService(t, {
      PLANT_STORE_TOKENS: TOKEN,
      DATABASE_URL: database.url,
      NODE_ENV: 'test',
      TRUST_PROXY: '127.0.0.1',
    }),
  ),
)
const targets = replicas.map((replica) => new URL(replica.url).host)
const gateway = await startGateway(t, { upstreams: targets })
const prometheus = await startPrometheus(drillConfig(targets))

t.test(
  `the database cut under load: ${ALERT} fires within its for: plus one evaluation interval of going pending, ` +
    'and resolves once the database is back',
  async (t) => {
    const load = startLoad(gateway, TOKEN, 1n, CLIENTS)
    t.teardown(() => load.stop())
    await load.successes(200, 0, 120_000)
    await waitUntil('Prometheus to scrape both replicas', 30_000, async () => {
      const { activeTargets } = await api<{ activeTargets: Array<{ health: string }> }>(prometheus, '/api/v1/targets')
      return activeTargets.length === 2 && activeTargets.every((target) => target.health === 'up')
    })
    // A steady state: the rule's 1 min rate window full of scrapes under load.
    await waitUntil('a minute of scrapes under load', 3 * 60_000, async () => {
      const { result } = await api<{ result: Array<{ value: [number, string] }> }>(
        prometheus,
        `/api/v1/query?query=${encodeURIComponent('min(count_over_time(up{job="plant-store"}[1m]))')}`,
      )
      return Number(result[0]?.value[1] ?? 0) >= 50 / INTERVAL_S
    })
    const rules = await alertingRules(prometheus)
    t.same(
      rules.filter((rule) => rule.health !== 'ok' && rule.health !== 'unknown').map((rule) => rule.lastError),
      [],
      'every alerting rule evaluates without error',
    )
    const forSeconds = rules.find((rule) => rule.name === ALERT)!.duration
    t.equal(forSeconds, 60, `the shipped rule, for: ${forSeconds} s`)
    t.equal(await storeAlert(prometheus), undefined, 'the store alert is inactive while the database answers')

    const cutAt = Date.now()
    database.cut()
    let firingSeenAt = 0
    let activeAt = 0
    await waitUntil(`${ALERT} to fire`, 5 * 60_000, async () => {
      const alert = await storeAlert(prometheus)
      if (alert === undefined) return false
      activeAt = Date.parse(alert.activeAt)
      if (alert.state !== 'firing') return false
      firingSeenAt = Date.now()
      t.same(alert.labels, { alertname: ALERT, job: 'plant-store', severity: 'page' }, 'one alert, of the job')
      return true
    })
    const unavailable = load.outcomes.filter((outcome) => outcome.sentAt >= performance.now() - (Date.now() - cutAt))
    t.ok(
      unavailable.some((outcome) => outcome.status === 503 && outcome.retryAfter !== undefined),
      `clients got 503 with Retry-After: ${JSON.stringify(countByStatus(unavailable))}`,
    )
    const pendingToFiring = (firingSeenAt - activeAt) / 1000
    // Polled every 50 ms, on a machine others share: a second more for the poll and the clock.
    t.ok(
      pendingToFiring <= forSeconds + INTERVAL_S + 1,
      `firing ${pendingToFiring.toFixed(1)} s after going pending ` +
        `(for: ${forSeconds} s, evaluation every ${INTERVAL_S} s)`,
    )
    // Pending once failures outnumber successes in the rule's 1 min rate window: within that window at most.
    t.ok(
      (firingSeenAt - cutAt) / 1000 <= 60 + forSeconds + INTERVAL_S + 5,
      'firing within the rate window, the for: and an evaluation of the cut (and 5 s for a shared machine)',
    )
    t.comment(
      `database cut: pending after ${((activeAt - cutAt) / 1000).toFixed(1)} s ` +
        '(failed transactions outnumbering, in the 1 min rate window, those that succeeded), ' +
        `firing after ${((firingSeenAt - cutAt) / 1000).toFixed(1)} s`,
    )

    const healedAt = Date.now()
    const healedAtMonotonic = performance.now()
    database.heal()
    await load.successes(100, healedAtMonotonic, 120_000)
    await waitUntil(`${ALERT} to resolve`, 5 * 60_000, async () => (await storeAlert(prometheus)) === undefined)
    const resolvedSeconds = (Date.now() - healedAt) / 1000
    t.equal(
      (await alertingRules(prometheus)).find((rule) => rule.name === ALERT)?.state,
      'inactive',
      `resolved ${resolvedSeconds.toFixed(1)} s after the database came back`,
    )
    // Failed transactions leave the 1 min window; a few evaluations more on a shared machine.
    t.ok(resolvedSeconds <= 60 + 10 * INTERVAL_S, 'within the rate window and a few evaluations')
    t.comment(`database back: creates stored again, the alert resolved after ${resolvedSeconds.toFixed(1)} s`)
    await load.stop()
  },
)
