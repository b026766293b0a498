/**
 * `npm run bench`: the same `POST /plants` load against a raw `node:http` server
 * (the ceiling), the service on its embedded store and the service on PostgreSQL,
 * one after the other in one run; writes `docs/benchmarks.md`.
 *
 * Environment (all optional):
 * - `BENCH_DURATION`: seconds measured per target (default 10, 1–600);
 * - `BENCH_WARMUP`: seconds of warm-up before each (default 3, 0–60);
 * - `BENCH_CONNECTIONS`: default 50;
 * - `BENCH_TARGETS`: comma-separated subset of `raw,durable,unstored,embedded,postgres`
 *   (default all); `durable` is the raw server that also commits each plant to
 *   SQLite (`raw-ceiling.ts` with `DATA_DIR`), `unstored` the service with its
 *   database write skipped (`unstored-service.ts`): two references that show
 *   what storing durably costs;
 * - `BENCH_DATABASE_URL`: PostgreSQL for the third target, loopback only
 *   (default `postgres://postgres@127.0.0.1:5432/test`);
 * - `BENCH_SOAK`: seconds of steady load against the embedded service after the
 *   targets (default 0 = none, at most 3600); `BENCH_SOAK_RATE`: its req/s (default 2000),
 *   `BENCH_SOAK_CONNECTIONS`: its connections (default 25);
 * - `BENCH_PROFILE`: a directory; the measured service processes then run under
 *   `node --cpu-prof` and write their `.cpuprofile` into `<dir>/embedded` and
 *   `<dir>/postgres` (summarise with `bench-profile.ts`); the figures of a profiled
 *   run are lower than those of a plain one;
 * - `BENCH_REPORT`: where to write the report (default `docs/benchmarks.md`).
 *
 * Loopback only, bounded in time; every child process is killed on exit.
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EXPECTED_BODY, jsonHeaders, PlantIds, runLoad } from './load.js'
import { storeActivity, storeTotals } from './metrics.js'
import { assertLoopback, postgresUnavailable, removeBenchRows, storedInPostgres } from './postgres.js'
import { freePort, killAll, pinSelf, postJson, type ServerProcess, startServer, TASKSET } from './process.js'
import { renderResults, type RunSettings, type TargetResult, writeReport } from './report.js'
import { renderSoak, runSoak } from './soak.js'

const SERVICE = fileURLToPath(new URL('../service/server.js', import.meta.url))
const RAW_CEILING = fileURLToPath(new URL('./raw-ceiling.js', import.meta.url))
const UNSTORED_SERVICE = fileURLToPath(new URL('./unstored-service.js', import.meta.url))
const REPO = fileURLToPath(new URL('../../', import.meta.url))

function bounded(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]
  const value = raw === undefined || raw === '' ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max}`)
  return value
}

const durationS = bounded('BENCH_DURATION', 10, 1, 600)
const warmupS = bounded('BENCH_WARMUP', 3, 0, 60)
const connections = bounded('BENCH_CONNECTIONS', 50, 1, 1000)
const soakS = bounded('BENCH_SOAK', 0, 0, 3600)
const soakRate = bounded('BENCH_SOAK_RATE', 2000, 1, 100_000)
const soakConnections = bounded('BENCH_SOAK_CONNECTIONS', 25, 1, 1000)
const targets = new Set((process.env.BENCH_TARGETS ?? 'raw,durable,unstored,embedded,postgres').split(',').map((name) => name.trim()))
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const profileDir = process.env.BENCH_PROFILE ? resolve(process.env.BENCH_PROFILE) : undefined
const reportPath = resolve(REPO, process.env.BENCH_REPORT ?? 'docs/benchmarks.md')
assertLoopback(databaseUrl)

// A token for this run only: never printed, never written.
const token = randomBytes(24).toString('base64url')
const ids = new PlantIds()
const pinned = TASKSET !== undefined && availableParallelism() >= 2 && pinSelf(1)
const SERVER_CORE = pinned ? 0 : undefined
const pinning = pinned
  ? 'each server process on CPU 0 (`taskset -c 0`), the load generator (this script, autocannon in-process) on CPU 1; PostgreSQL not pinned'
  : 'none (taskset or a second core missing)'
/** The commit measured, and whether the service's sources differ from it (read-only git). */
function revision(): string {
  try {
    const git = (...args: string[]) => execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8', timeout: 5000 }).trim()
    const dirty = git('status', '--porcelain', '--', 'service', 'openapi.yaml') !== ''
    return `commit \`${git('rev-parse', '--short', 'HEAD')}\`${dirty ? ' with uncommitted changes in service/ or openapi.yaml' : ''}`
  } catch {
    return 'unknown commit (git unavailable)'
  }
}
const serviceRevision = revision()
const temporary: string[] = []
let exitCode = 0
const RATE_LIMIT_MAX = 1_000_000_000

/** Probe: one `POST /plants` with a new id, answered 200 with the Plant. */
async function probe(url: string): Promise<string | undefined> {
  const answer = await postJson(`${url}/plants`, jsonHeaders(token), ids.body())
  return answer.status === 200 && answer.body === EXPECTED_BODY ? undefined : `status ${answer.status}: ${answer.body.slice(0, 200)}`
}

/**
 * Environment of a service process. The per-token rate limit is raised far above
 * what one run sends (not turned off), so its hook still runs on every request
 * and is measured, but a single-token load is not answered 429.
 */
function serviceEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { NODE_ENV: 'production', PLANT_STORE_TOKENS: token, LOG_LEVEL: 'warn', RATE_LIMIT_MAX: String(RATE_LIMIT_MAX), DATA_DIR: freshDataDir(), ...extra }
}

function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-bench-'))
  temporary.push(dir)
  return dir
}

type Measured = Pick<TargetResult, 'load' | 'peakRssMb' | 'store'>

async function measure(server: ServerProcess): Promise<Measured> {
  const options = { url: server.url, token, ids, connections, serverCpuSeconds: () => server.cpuSeconds() }
  if (warmupS > 0) await runLoad({ ...options, duration: warmupS })
  const before = await storeTotals(server.url)
  const load = await runLoad({ ...options, duration: durationS })
  const store = storeActivity(before, await storeTotals(server.url))
  return { load, peakRssMb: server.peakRssMb(), ...(store === undefined ? {} : { store }) }
}

/** Row titles of the report, by target. */
const TITLES = {
  raw: 'raw `node:http` (ceiling)',
  durable: 'raw `node:http` + SQLite commit (durable ceiling)',
  unstored: 'service, database write skipped (ablation)',
  embedded: 'service, embedded store',
  postgres: 'service, PostgreSQL',
} as const satisfies Record<TargetResult['key'], string>

/** The ceiling, or with a data directory the durable ceiling. */
async function runRaw(key: 'raw' | 'durable'): Promise<TargetResult> {
  const title = TITLES[key]
  const env = { PLANT_STORE_TOKENS: token, ...(key === 'durable' ? { DATA_DIR: freshDataDir() } : {}) }
  const server = await startServer({ script: RAW_CEILING, env, port: await freePort(), core: SERVER_CORE, probe })
  try {
    const readyRssMb = server.rssMb()
    return { key, title, readyRssMb, ...(await measure(server)), readyMs: server.readyMs }
  } finally {
    await server.stop()
  }
}

/** Starts the service, measures it, stops it, and starts it again on the same data. */
async function runService(key: 'unstored' | 'embedded' | 'postgres'): Promise<TargetResult> {
  const title = TITLES[key]
  const script = key === 'unstored' ? UNSTORED_SERVICE : SERVICE
  if (key === 'postgres') {
    const unavailable = await postgresUnavailable(databaseUrl)
    if (unavailable !== undefined) return { key, title, notRun: unavailable }
  }
  const env = serviceEnv(key === 'postgres' ? { DATABASE_URL: databaseUrl } : {})
  const nodeArgs = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, key)}`]
  const first = await startServer({ nodeArgs, script, env, port: await freePort(), core: SERVER_CORE, probe })
  let measured: Measured
  const readyRssMb = first.rssMb()
  try {
    if (key === 'postgres' && !(await storedInPostgres(databaseUrl, ids.base + ids.issued - 1n))) {
      return { key, title, notRun: 'the service answered, but its row is not in PostgreSQL: DATABASE_URL is not supported by this build' }
    }
    measured = await measure(first)
  } finally {
    const stopped = await first.stop()
    if (stopped.killed) process.stderr.write(`${title}: did not stop within 10 s of SIGTERM; killed\n`)
  }
  const again = await startServer({ script, env, port: await freePort(), core: SERVER_CORE, probe })
  await again.stop()
  return { key, title, readyRssMb, ...measured, readyMs: first.readyMs, readyAgainMs: again.readyMs }
}

async function runTarget(key: TargetResult['key']): Promise<TargetResult> {
  if (!targets.has(key)) return { key, title: TITLES[key], notRun: 'not selected (BENCH_TARGETS)' }
  process.stdout.write(`${TITLES[key]}: ${warmupS} s warm-up, ${durationS} s measured …\n`)
  try {
    return key === 'raw' || key === 'durable' ? await runRaw(key) : await runService(key)
  } catch (error) {
    return { key, title: TITLES[key], notRun: `failed: ${(error as Error).message.replace(/\s+/g, ' ').slice(0, 300)}` }
  }
}

async function soak(): Promise<string> {
  process.stdout.write(`soak: ${soakS} s at ${soakRate} req/s against the embedded service …\n`)
  const server = await startServer({ script: SERVICE, env: serviceEnv(), port: await freePort(), core: SERVER_CORE, probe })
  try {
    const loadAtStart = loadavg()[0] ?? 0
    const samples = await runSoak({ server, token, ids, connections: soakConnections, seconds: soakS, rate: soakRate })
    const loadAverage = [loadAtStart, loadavg()[0] ?? 0] as const
    return renderSoak(new Date(), { connections: soakConnections, seconds: soakS, rate: soakRate }, samples, `Service: ${serviceRevision}. Pinning: ${pinning}`, loadAverage)
  } catch (error) {
    exitCode = 1
    return `Run ${new Date().toISOString()} (${soakS} s at ${soakRate} req/s): **failed**: ${(error as Error).message.replace(/\s+/g, ' ')}`
  } finally {
    await server.stop()
  }
}

/** Removes the run's temporary directories and its PostgreSQL rows (its id range only). */
async function cleanUp(): Promise<void> {
  killAll()
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true })
  if (targets.has('postgres') && (await postgresUnavailable(databaseUrl)) === undefined) {
    const removed = await removeBenchRows(databaseUrl, ids.base, ids.issued).catch(() => 0)
    if (removed > 0) process.stdout.write(`PostgreSQL: removed this run's ${removed} rows\n`)
  }
}

// Interrupted: the same clean-up, bounded, then out (children are also killed on exit).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    setTimeout(() => process.exit(130), 10_000).unref()
    void cleanUp().finally(() => process.exit(130))
  })
}

try {
  const date = new Date()
  const loadAtStart = loadavg()[0] ?? 0
  const results: TargetResult[] = []
  for (const key of ['raw', 'durable', 'unstored', 'embedded', 'postgres'] as const) {
    const result = await runTarget(key)
    results.push(result)
    const load = result.load
    process.stdout.write(
      load === undefined
        ? `  not run: ${result.notRun}\n`
        : `  ${Math.round(load.requestsPerSecond)} req/s, p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms, ` +
            `statuses ${JSON.stringify(load.statuses)}, errors ${load.errors}, CPU server ${load.serverCpuPercent?.toFixed(0)} % / generator ${load.generatorCpuPercent.toFixed(0)} %, peak RSS ${result.peakRssMb?.toFixed(1)} MB, ready ${result.readyMs?.toFixed(0)} ms` +
            (result.readyAgainMs === undefined ? '' : `, ready again ${result.readyAgainMs.toFixed(0)} ms`) +
            (result.store === undefined ? '\n' : `, ${result.store.transactions} store transactions of ${result.store.meanBatch.toFixed(1)} plants, ${result.store.meanTransactionMs.toFixed(2)} ms each\n`),
    )
    if (targets.has(key) && key !== 'postgres' && load === undefined) exitCode = 1
  }
  const loadAverage = [loadAtStart, loadavg()[0] ?? 0] as const
  const soakSection = soakS > 0 ? await soak() : undefined
  const settings: RunSettings = { durationS, warmupS, connections, pinning, idBase: ids.base, databaseUrl, revision: serviceRevision, profiled: profileDir !== undefined, loadAverage }
  writeReport(reportPath, renderResults(date, settings, results), soakSection)
  process.stdout.write(`report: ${reportPath}\n`)
} catch (error) {
  process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`)
  exitCode = 1
} finally {
  await cleanUp()
}
process.exit(exitCode)
