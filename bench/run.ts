/**
 * `npm run bench`: the same `POST /plants` load (wrk) against the ceilings (raw `node:http`: nothing stored, a SQLite
 * commit, a PostgreSQL commit), the design floor (Fastify and glue alone) and the service on each store, in
 * interleaved rounds; with `BENCH_BASELINE_REF`, also the service at that git ref (target `baseline`) and the A/B.
 * Writes the report (`docs/benchmarks.md`) and its chart beside it (`.svg`). The service is reached only as users
 * reach it: its environment, HTTP, `/metrics`, and its store's rows once it stopped.
 *
 * Its settings (`BENCH_*` environment variables) are described in docs/benchmarks.md, "How to run".
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { baselinePlace, type Baseline, type InstallMode, prepareBaseline, removeBaseline } from './baseline.ts'
import { callgrindCommand, dumpedInstructions, monitor } from './callgrind.ts'
import { chartRows, renderChart } from './chart.ts'
import { REPO, SERVICE_ENVIRONMENT, SERVICE_NODE_OPTIONS } from './image.ts'
import { EXPECTED_BODY, jsonHeaders, PlantIds, runLoad } from './load.ts'
import { meanBatch, scrape } from './metrics.ts'
import { killAll, pinSelf, postJson, type ServerProcess, startServer, TASKSET } from './process.ts'
import {
  abVerdicts,
  COUNTED_THRESHOLDS,
  cpuPerRequest,
  DEFAULT_TARGETS,
  DEFAULT_THRESHOLDS,
  parseThresholds,
  renderResults,
  roundOrder,
  type TargetKey,
  TARGET_KEYS,
  type TargetResult,
  writeReport,
} from './report.ts'
import {
  assertLoopback,
  countPostgresRows,
  countSqliteRows,
  postgresUnavailable,
  removePostgresRows,
} from './stores.ts'

function bounded(name: string, fallback: number, min: number, max: number): number {
  const value = Number(process.env[name] || fallback)
  if (!Number.isInteger(value) || value < min || value > max)
    throw new Error(`${name}: an integer from ${min} to ${max}`)
  return value
}
const roundCount = bounded('BENCH_ROUNDS', 5, 1, 50)
const durationS = bounded('BENCH_DURATION', 10, 1, 600)
const warmupS = bounded('BENCH_WARMUP', 10, 0, 60)
const connections = bounded('BENCH_CONNECTIONS', 50, 1, 1000)
const baselineRef = process.env.BENCH_BASELINE_REF?.trim() || undefined
const install = (process.env.BENCH_BASELINE_INSTALL || 'auto') as InstallMode
if (!['auto', 'link', 'ci'].includes(install)) throw new Error('BENCH_BASELINE_INSTALL: auto, link or ci')
const instructions = process.env.BENCH_INSTRUCTIONS || 'off'
if (!['on', 'off'].includes(instructions)) throw new Error('BENCH_INSTRUCTIONS: on or off')
const counting = instructions === 'on'
const thresholds = parseThresholds(
  process.env.BENCH_AB_THRESHOLDS || (counting ? COUNTED_THRESHOLDS : DEFAULT_THRESHOLDS),
)
const names = process.env.BENCH_TARGETS?.split(',').map((name) => name.trim()) ?? [
  ...DEFAULT_TARGETS,
  ...(baselineRef === undefined ? [] : ['baseline']),
]
for (const name of names) if (!TARGET_KEYS.includes(name as TargetKey)) throw new Error(`BENCH_TARGETS: no ${name}`)
const targets = new Set(names as TargetKey[])
if (targets.has('baseline') && baselineRef === undefined) throw new Error('target baseline needs BENCH_BASELINE_REF')
const databaseUrl = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
assertLoopback(databaseUrl)
const profileDir = process.env.BENCH_PROFILE ? resolve(process.env.BENCH_PROFILE) : undefined
const reportPath = resolve(REPO, process.env.BENCH_REPORT || 'docs/benchmarks.md')
const chartPath = reportPath.replace(/(\.md)?$/, '.svg')
const pinned = process.env.BENCH_PINNING !== 'off' && TASKSET !== undefined && availableParallelism() >= 2 && pinSelf(1)
const pinning = pinned
  ? 'each server process (all its threads) on CPU 0, wrk and this script on CPU 1; PostgreSQL not pinned'
  : 'none'

// A token for this run only: never printed or written (wrk gets it in its environment).
const token = randomBytes(24).toString('base64url')
const ids = new PlantIds()
const temporary: string[] = []
let exitCode = 0

const git = (...args: string[]) => execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8' }).trim()
const dirty = git('status', '--porcelain', '--', 'service', 'openapi.yaml') !== ''
const revision = `commit \`${git('rev-parse', '--short', 'HEAD')}\`${dirty ? ' with uncommitted changes' : ''}`

/** How each target runs: its script, where it stores, and its repository's root. */
interface Spec {
  title: string
  script: string
  store?: 'sqlite' | 'postgres' | undefined
  service: boolean
  cwd: string
}
const [RAW, FLOOR, SERVICE] = ['bench/raw-ceiling.js', 'bench/design-floor.js', 'service/server.js'].map((file) =>
  join(REPO, 'dist', file),
)
const spec = (title: string, script: string, store?: Spec['store']): Spec => {
  return { title, script, store, service: script !== RAW && script !== FLOOR, cwd: REPO }
}
const SPECS: Record<TargetKey, Spec> = {
  raw: spec('raw `node:http` (ceiling)', RAW!),
  durable: spec('raw `node:http` + SQLite commit (SQLite durable ceiling)', RAW!, 'sqlite'),
  'durable-pg': spec('raw `node:http` + PostgreSQL commit (PostgreSQL durable ceiling)', RAW!, 'postgres'),
  floor: spec('Fastify + fastify-openapi-glue on the contract, nothing else (design floor)', FLOOR!),
  embedded: spec('service, embedded store', SERVICE!, 'sqlite'),
  baseline: spec(`service at \`${baselineRef}\`, embedded store`, '', 'sqlite'),
  postgres: spec('service, PostgreSQL', SERVICE!, 'postgres'),
}

/** A target's environment: a fresh data directory, the store, and the service as it ships but never rate limited. */
function environment(key: TargetKey): Record<string, string> {
  const { store, service } = SPECS[key]
  const dataDir = mkdtempSync(join(tmpdir(), 'plant-store-bench-'))
  temporary.push(dataDir)
  return {
    PLANT_STORE_TOKENS: token,
    ...(store === 'sqlite' || service ? { DATA_DIR: dataDir } : {}),
    ...(store === 'postgres' ? { DATABASE_URL: databaseUrl } : {}),
    ...(service ? { NODE_ENV: 'production', RATE_LIMIT_MAX: '1000000000', ...SERVICE_ENVIRONMENT } : {}),
    ...(service && counting ? { LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '0' } : {}),
  }
}

async function probe(url: string): Promise<string | undefined> {
  const { status, body } = await postJson(`${url}/plants`, jsonHeaders(token), ids.body())
  return status === 200 && body === EXPECTED_BODY ? undefined : `status ${status}: ${body.slice(0, 200)}`
}

/**
 * A target's server; `measured`, with `BENCH_INSTRUCTIONS` under callgrind, else with `BENCH_PROFILE` under
 * `--cpu-prof`.
 */
const start = (key: TargetKey, env: Record<string, string>, measured?: { callgrindDir?: string | undefined }) => {
  const { script, cwd, service } = SPECS[key]
  const profiling =
    measured && !counting && profileDir !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, key)}`] : []
  const nodeArgs = service ? [...SERVICE_NODE_OPTIONS, ...profiling] : []
  const wrapper = measured?.callgrindDir === undefined ? undefined : callgrindCommand(measured.callgrindDir)
  const readyWithinS = wrapper ? 300 : 30
  return startServer({ script, cwd, env, nodeArgs, core: pinned ? 0 : undefined, probe, wrapper, readyWithinS })
}
// Under callgrind a request takes tens of times longer: neither a wait nor the event loop's delay is a fault.
const load = (server: ServerProcess, seconds: number) =>
  runLoad(server.url, token, ids, connections, seconds, pinned ? [TASKSET!, '-c', '1'] : [], counting ? 120 : 10)

/** Rows stored with the measured run's ids; `undefined` where nothing is stored or they cannot be counted. */
async function storedRows(key: TargetKey, env: Record<string, string>, firstId: bigint, count: bigint) {
  const { store, service } = SPECS[key]
  const table = service ? 'plant' : 'bench_plant'
  try {
    if (store === 'sqlite') return countSqliteRows(env.DATA_DIR!, table, firstId, count)
    if (store === 'postgres') return await countPostgresRows(databaseUrl, table, firstId, count)
  } catch (error) {
    process.stderr.write(`${SPECS[key].title}: its stored plants not counted: ${(error as Error).message}\n`)
  }
  return undefined
}

/** Under callgrind, how long the requests in flight when wrk stops may take to finish, ms. */
const IN_FLIGHT_MS = 1000

/** Where a counted start's callgrind files go: kept in `BENCH_PROFILE` as `<target>-<round>`, else removed at the end. */
function countedDir(key: TargetKey, round: number): string {
  if (profileDir === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-callgrind-'))
    temporary.push(dir)
    return dir
  }
  const dir = join(profileDir, `${key}-${round}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  return dir
}

/** Starts a target, warms it up, measures it, stops it, and starts it again on the data it left (ready). */
async function runTarget(key: TargetKey, round: number): Promise<TargetResult> {
  const { title, store } = SPECS[key]
  const unavailable = store === 'postgres' ? await postgresUnavailable(databaseUrl) : undefined
  if (unavailable !== undefined) return { key, title, notRun: unavailable }
  process.stdout.write(`${title}, round ${round} of ${roundCount} …\n`)
  execFileSync('sync') // earlier targets' dirty pages are not written back during this one's fsyncs
  const env = environment(key)
  try {
    const callgrindDir = counting ? countedDir(key, round) : undefined
    const server = await start(key, env, { callgrindDir })
    let result: Omit<TargetResult, 'key' | 'title'>
    try {
      if (warmupS > 0) await load(server, warmupS)
      if (callgrindDir !== undefined) await sleep(IN_FLIGHT_MS)
      const before = await scrape(server.url) // also resets the event loop's histogram
      if (callgrindDir !== undefined) monitor(callgrindDir, server.pid, 'instrumentation on')
      const cpuBefore = server.cpuTimes()
      let peakRssMb = server.peakRssMb()
      const sampler = setInterval(() => (peakRssMb = server.peakRssMb() ?? peakRssMb), 250)
      const measured = await load(server, durationS).finally(() => clearInterval(sampler))
      const cpuAfter = server.cpuTimes()
      peakRssMb = server.peakRssMb() ?? peakRssMb
      if (callgrindDir !== undefined) {
        await sleep(IN_FLIGHT_MS)
        monitor(callgrindDir, server.pid, 'dump')
      }
      const after = await scrape(server.url)
      const exited = server.exitStatus()
      result = {
        load: measured,
        cpu: cpuBefore &&
          cpuAfter && { user: cpuAfter.user - cpuBefore.user, system: cpuAfter.system - cpuBefore.system },
        peakRssMb,
        lagP99Ms: after?.lagP99Ms,
        meanBatch: meanBatch(before, after),
        instructions: callgrindDir === undefined ? undefined : dumpedInstructions(callgrindDir),
        ...(exited === undefined ? {} : { exited }),
      }
    } finally {
      await server.stop()
    }
    const rows = await storedRows(key, env, result.load!.firstId, result.load!.idCount)
    const again = await start(key, env)
    await again.stop()
    return { key, title, ...result, readyMs: again.readyMs, ...(rows === undefined ? {} : { storedRows: rows }) }
  } catch (error) {
    return { key, title, notRun: `failed: ${(error as Error).message.replace(/\s+/g, ' ').slice(0, 300)}` }
  }
}

const summary = ({ key, load, notRun, cpu, lagP99Ms, readyMs }: TargetResult) =>
  load === undefined
    ? `  ${key}: not run: ${notRun}\n`
    : `  ${key}: ${Math.round(load.requestsPerSecond)} req/s, p99 ${load.latencyMs.p99.toFixed(2)} ms, CPU ${cpuPerRequest(cpu, load.responses)?.toFixed(1)} µs per request, event loop p99 ${lagP99Ms?.toFixed(1) ?? 'n/a'} ms, ready ${readyMs?.toFixed(0)} ms, statuses ${JSON.stringify(load.statuses)}, errors ${load.errors}, wrong bodies ${load.wrongBodies}\n`

async function cleanUp(place: ReturnType<typeof baselinePlace> | undefined): Promise<void> {
  killAll()
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true })
  if (place !== undefined) removeBaseline(place)
  if ((targets.has('postgres') || targets.has('durable-pg')) && !(await postgresUnavailable(databaseUrl))) {
    const removed = await removePostgresRows(databaseUrl, ['plant', 'bench_plant'], ids.base, ids.issued)
    if (removed > 0) process.stdout.write(`PostgreSQL: removed this run's ${removed} rows\n`)
  }
}

const place = targets.has('baseline') ? baselinePlace(REPO) : undefined
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    setTimeout(() => process.exit(130), 10_000).unref()
    void cleanUp(place).finally(() => process.exit(130))
  })

try {
  let baseline: Baseline | undefined
  if (place !== undefined) {
    const cache = resolve(process.env.BENCH_BASELINE_CACHE || join(tmpdir(), 'plant-store-baseline-deps'))
    const entry = process.env.BENCH_BASELINE_ENTRY || 'dist/service/server.js'
    baseline = prepareBaseline(place, baselineRef!, install, entry, cache, (line) => process.stdout.write(`${line}\n`))
    SPECS.baseline = { ...SPECS.baseline, script: baseline.script, cwd: baseline.root }
  }
  // One unmeasured start of each: Node's compile cache and the page cache are then warm for all alike.
  process.stdout.write('one unmeasured start of each target …\n')
  for (const key of roundOrder(1, targets))
    if (SPECS[key].store !== 'postgres' || !(await postgresUnavailable(databaseUrl)))
      await start(key, environment(key)).then(
        (server) => server.stop(),
        () => undefined,
      )
  const date = new Date()
  const loadAtStart = loadavg()[0]!
  const rounds: TargetResult[][] = []
  for (let round = 1; round <= roundCount; round++) {
    const results: TargetResult[] = []
    for (const key of roundOrder(round, targets)) {
      const result = await runTarget(key, round)
      process.stdout.write(summary(result))
      if (SPECS[key].store !== 'postgres' && result.load === undefined) exitCode = 1
      results.push(result)
    }
    rounds.push(results)
  }
  const settings = {
    durationS,
    warmupS,
    connections,
    pinning,
    revision,
    command: [
      ...Object.entries(SERVICE_ENVIRONMENT).map(([k, v]) => `${k}=${v}`),
      ...(counting ? callgrindCommand('<dir>') : []),
      'node',
      ...SERVICE_NODE_OPTIONS,
      'dist/service/server.js',
    ].join(' '),
    databaseUrl,
    profiled: profileDir !== undefined && !counting,
    counted: counting,
    loadAverage: [loadAtStart, loadavg()[0]!] as const,
    minutes: (Date.now() - date.getTime()) / 60_000,
    chart: basename(chartPath),
    baseline: baseline && { ref: baselineRef!, how: baseline.how },
  }
  writeReport(reportPath, renderResults(date, settings, rounds, thresholds))
  const chartTitle = `POST /plants, ${date.toISOString().slice(0, 10)}: median and range over ${roundCount} round${roundCount === 1 ? '' : 's'}`
  writeFileSync(chartPath, await renderChart(chartRows(rounds), chartTitle))
  if (baseline !== undefined)
    for (const { key, measured, threshold, met } of abVerdicts(rounds, thresholds))
      process.stdout.write(
        `A/B ${key}: ${measured?.median.toFixed(2) ?? 'n/a'}${threshold === undefined ? '' : `: ${met === undefined ? 'not measured' : met ? 'met' : 'NOT MET'}`}\n`,
      )
  process.stdout.write(`report: ${reportPath}, chart: ${chartPath}\n`)
} catch (error) {
  process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`)
  exitCode = 1
} finally {
  await cleanUp(place)
}
process.exit(exitCode)
