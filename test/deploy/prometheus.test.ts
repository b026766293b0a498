/**
 * The store alert through Debian's Prometheus with the shipped rules, two replicas behind the gateway under load: the
 * database cut, it fires in time; back, it resolves.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { postgresSchema, TOKEN } from '../helpers/app.ts'
import { countByStatus, startLoad } from '../helpers/create-load.ts'
import { freePort } from '../helpers/machine.ts'
import { startGateway } from '../helpers/nginx.ts'
import { partitionProxy } from '../helpers/partition-proxy.ts'
import { startDaemon, waitUntil } from '../helpers/podman.ts'
import { startService } from '../helpers/process.ts'

t.setTimeout(15 * 60_000)

const DIR = fileURLToPath(new URL('../../deploy/prometheus/', import.meta.url))
const ALERT = 'PlantStoreStoreUnavailable'
/** Scrape and evaluation interval, s. */
const INTERVAL_S = 1

const api = async <T>(path: string): Promise<T> => {
  const response = await fetch(`${prometheus}${path}`)
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return ((await response.json()) as { data: T }).data
}
type Alert = { labels: Record<string, string>; state: string; activeAt: string }
const storeAlert = async () =>
  (await api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts.find((alert) => alert.labels.alertname === ALERT)
type AlertingRule = { name: string; duration: number; health: string; lastError?: string; state: string }
const alertingRules = async () =>
  (await api<{ groups: Array<{ rules: AlertingRule[] }> }>('/api/v1/rules?type=alert')).groups.flatMap((g) => g.rules)

const schema = await postgresSchema(t)
const database = await partitionProxy(t, schema.url)
const env = { PLANT_STORE_TOKENS: TOKEN, DATABASE_URL: database.url, NODE_ENV: 'test', TRUST_PROXY: '127.0.0.1' }
const replicas = await Promise.all([0, 1].map(() => startService(t, env)))
const targets = replicas.map((replica) => new URL(replica.url).host)
const gateway = await startGateway(t, targets)

// The shipped configuration: the replicas as targets, every INTERVAL_S.
const config = parse(readFileSync(join(DIR, 'prometheus.yml'), 'utf8'))
Object.assign(config.global, { scrape_interval: `${INTERVAL_S}s`, evaluation_interval: `${INTERVAL_S}s` })
config.rule_files = config.rule_files.map((file: string) => join(DIR, file))
const job = config.scrape_configs.find((job: { job_name: string }) => job.job_name === 'plant-store')
Object.assign(job, { scrape_timeout: `${INTERVAL_S}s`, static_configs: [{ targets }] })
const dir = t.testdir()
writeFileSync(join(dir, 'prometheus.yml'), stringify(config))
const prometheus = `http://127.0.0.1:${await freePort()}`
const flags = [`config.file=${join(dir, 'prometheus.yml')}`, `storage.tsdb.path=${join(dir, 'data')}`]
flags.push(`web.listen-address=${prometheus.slice(7)}`, 'log.level=warn')
const ready = async () => (await fetch(`${prometheus}/-/ready`).catch(() => undefined))?.status === 200
await startDaemon(t, ['/usr/bin/prometheus', ...flags.map((flag) => `--${flag}`)], ready, { timeoutMs: 60_000 })

t.test(
  `the database cut under load: ${ALERT} fires within its for: plus one evaluation interval of going pending, ` +
    'and resolves once the database is back',
  async (t) => {
    const load = startLoad(gateway, TOKEN, 1n, 4)
    t.teardown(() => load.stop())
    await load.successes(200, 0, 120_000)
    await waitUntil('Prometheus to scrape both replicas', 30_000, async () => {
      const { activeTargets } = await api<{ activeTargets: Array<{ health: string }> }>('/api/v1/targets')
      return activeTargets.length === 2 && activeTargets.every((target) => target.health === 'up')
    })
    // A steady state: the rule's 1 min window full of scrapes under load.
    await waitUntil('a minute of scrapes under load', 3 * 60_000, async () => {
      const { result } = await api<{ result: Array<{ value: [number, string] }> }>(
        `/api/v1/query?query=${encodeURIComponent('min(count_over_time(up{job="plant-store"}[1m]))')}`,
      )
      return Number(result[0]?.value[1] ?? 0) >= 50 / INTERVAL_S
    })
    const rules = await alertingRules()
    t.same(
      rules.filter((rule) => rule.health !== 'ok' && rule.health !== 'unknown').map((rule) => rule.lastError),
      [],
      'every alerting rule evaluates without error',
    )
    const forSeconds = rules.find((rule) => rule.name === ALERT)!.duration
    t.equal(forSeconds, 60, `the shipped rule, for: ${forSeconds} s`)
    t.equal(await storeAlert(), undefined, 'the store alert is inactive while the database answers')

    const cutAt = Date.now()
    database.cut()
    let [firingSeenAt, activeAt] = [0, 0]
    await waitUntil(`${ALERT} to fire`, 5 * 60_000, async () => {
      const alert = await storeAlert()
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
    // A second more for the 50 ms poll and the clock.
    t.ok(
      pendingToFiring <= forSeconds + INTERVAL_S + 1,
      `firing ${pendingToFiring.toFixed(1)} s after going pending ` +
        `(for: ${forSeconds} s, evaluation every ${INTERVAL_S} s)`,
    )
    // Pending once failures outnumber successes in the rule's 1 min window: within it at most.
    t.ok(
      (firingSeenAt - cutAt) / 1000 <= 60 + forSeconds + INTERVAL_S + 5,
      'firing within the rate window, the for: and an evaluation (and 5 s for a shared machine)',
    )
    const after = (at: number) => `${((at - cutAt) / 1000).toFixed(1)} s`
    t.comment(`database cut: pending after ${after(activeAt)}, firing after ${after(firingSeenAt)}`)

    const [healedAt, healedAtMonotonic] = [Date.now(), performance.now()]
    database.heal()
    await load.successes(100, healedAtMonotonic, 120_000)
    await waitUntil(`${ALERT} to resolve`, 5 * 60_000, async () => (await storeAlert()) === undefined)
    const resolvedSeconds = (Date.now() - healedAt) / 1000
    t.equal(
      (await alertingRules()).find((rule) => rule.name === ALERT)?.state,
      'inactive',
      `resolved ${resolvedSeconds.toFixed(1)} s after the database came back`,
    )
    // Failed transactions leave the 1 min window, plus a few evaluations.
    t.ok(resolvedSeconds <= 60 + 10 * INTERVAL_S, 'within the rate window and a few evaluations')
    t.comment(`database back: creates stored again, the alert resolved after ${resolvedSeconds.toFixed(1)} s`)
    await load.stop()
  },
)
