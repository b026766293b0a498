/**
 * `npm run bench`: the same `POST /plants` load (wrk) against the ceilings (raw
 * `node:http`: nothing stored, committing to SQLite, committing to PostgreSQL), the
 * design floor (Fastify and glue alone), the service with its database write
 * skipped, the service on each store, and the service traced, in interleaved
 * rounds: each round runs every target once, in turn; writes `docs/benchmarks.md`.
 * With `BENCH_BASELINE_REF`, also the service at that git ref (target `baseline`),
 * in the same rounds as the working tree's (`embedded`), and an A/B comparison.
 *
 * Environment (all optional):
 * - `BENCH_ROUNDS`: rounds (default 5, 1–50);
 * - `BENCH_DURATION`: seconds measured per target and round (default 10, 1–600);
 * - `BENCH_WARMUP`: seconds of warm-up before each (default 10, 0–60): V8 is still
 *   optimizing the request path for about 8 s after a start, so a shorter warm-up
 *   measures JIT warm-up; the warm-up's own p99 is reported too;
 * - `BENCH_CONNECTIONS`: default 50;
 * - `BENCH_TARGETS`: comma-separated subset of
 *   `raw,durable,durable-pg,floor,unstored,embedded,baseline,postgres,traced` (default
 *   all but `baseline`, and `baseline` too when `BENCH_BASELINE_REF` is set);
 * - `BENCH_BASELINE_REF`: a git ref (`fa9b7d2`, `main~3`): checked out into a
 *   temporary git worktree, its dependencies linked or installed
 *   (`BENCH_BASELINE_INSTALL`: `auto`, default, `link` or `ci`, whose install is kept
 *   for reuse under `BENCH_BASELINE_CACHE`; see `baseline.ts`),
 *   built with its own `npm run build`, and run as target `baseline` from
 *   `BENCH_BASELINE_ENTRY` (default `dist/service/server.js`); the worktree is removed
 *   at the end;
 * - `BENCH_DATABASE_URL`: PostgreSQL for `durable-pg` and `postgres`, loopback only
 *   (default `postgres://postgres@127.0.0.1:5432/test`);
 * - `BENCH_PINNING`: `on` (default when `taskset` and two cores exist: each server
 *   process on CPU 0, wrk on CPU 1) or `off`;
 * - `BENCH_INSTRUCTIONS`: `auto` (default: perf when the machine counts
 *   instructions), `perf`, `callgrind` (after the rounds, one separate run of each
 *   target under valgrind for `BENCH_CALLGRIND_BUDGET` seconds, default 900, counted
 *   in callgrind rounds of `BENCH_CALLGRIND_ROUND` seconds, default 10) or `off`;
 * - `BENCH_SOAK`: seconds of steady load against the embedded service after the
 *   targets (default 0 = none, at most 3600); `BENCH_SOAK_RATE`: its req/s (default 2000),
 *   `BENCH_SOAK_CONNECTIONS`: its connections (default 25);
 * - `BENCH_PROFILE`: a directory; the measured service processes then run under
 *   `node --cpu-prof` and write their `.cpuprofile` into `<dir>/<target>`
 *   (summarise with `profile.ts`); the figures of a profiled run are lower;
 * - `BENCH_PERF`: a directory; every target runs with `node --perf-basic-prof`, its
 *   measured run is recorded on-CPU (`perf record -e cpu-clock`, `on-cpu.ts`) into
 *   `<dir>/<target>-<round>.data`, with a summary beside it (`.txt`); needs `perf`;
 * - `BENCH_REPORT`: where to write the report (default `docs/benchmarks.md`).
 *
 * Loopback only, bounded in time; every child process is killed on exit.
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { REPO, SERVICE_ENVIRONMENT, SERVICE_ENV_SETTINGS, SERVICE_NODE_OPTIONS } from './image.ts'
import {
  callgrindControl,
  callgrindFigure,
  callgrindWrapper,
  chooseCounter,
  type InstructionCounter,
  perfCount,
  type Round,
} from './instructions.ts'
import { perfNodeOptions, perfRecord, perfSummary } from './on-cpu.ts'
import { EXPECTED_BODY, jsonHeaders, type LoadSummary, PlantIds, runLoad } from './load.ts'
import { storeActivity, storeTotals } from './metrics.ts'
import {
  assertLoopback,
  countPostgresRows,
  postgresUnavailable,
  removeBenchRows,
  storedInPostgres,
} from './postgres.ts'
import { freePort, killAll, pinSelf, postJson, type ServerProcess, startServer, TASKSET } from './process.ts'
import {
  AB_FIGURES,
  abVerdict,
  cpuPerRequest,
  DEFAULT_TARGETS,
  type Instructions,
  renderResults,
  roundOrder,
  type Rounds,
  type RunSettings,
  stolenShares,
  TARGET_KEYS,
  type TargetKey,
  type TargetResult,
  writeReport,
} from './report.ts'
import { type Baseline, baselinePlace, type InstallMode, prepareBaseline, removeBaseline } from './baseline.ts'
import { renderSoak, runSoak } from './soak.ts'
import { countSqliteRows } from './sqlite.ts'

const SERVICE = fileURLToPath(new URL('../service/server.js', import.meta.url))
const RAW_CEILING = fileURLToPath(new URL('./raw-ceiling.js', import.meta.url))
const UNSTORED_SERVICE = fileURLToPath(new URL('./unstored-service.js', import.meta.url))
const DESIGN_FLOOR = fileURLToPath(new URL('./design-floor.js', import.meta.url))
function bounded(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]
  const value = raw === undefined || raw === '' ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < min || value > max)
    throw new Error(`${name} must be an integer from ${min} to ${max}`)
  return value
}

const roundCount = bounded('BENCH_ROUNDS', 5, 1, 50)
const durationS = bounded('BENCH_DURATION', 10, 1, 600)
const warmupS = bounded('BENCH_WARMUP', 10, 0, 60)
const connections = bounded('BENCH_CONNECTIONS', 50, 1, 1000)
const soakS = bounded('BENCH_SOAK', 0, 0, 3600)
const soakRate = bounded('BENCH_SOAK_RATE', 2000, 1, 100_000)
const soakConnections = bounded('BENCH_SOAK_CONNECTIONS', 25, 1, 1000)
const callgrindRoundS = bounded('BENCH_CALLGRIND_ROUND', 10, 1, 600)
const callgrindBudgetS = bounded('BENCH_CALLGRIND_BUDGET', 900, 10, 7200)
const baselineRef = process.env.BENCH_BASELINE_REF?.trim() || undefined
const baselineInstall = (process.env.BENCH_BASELINE_INSTALL ?? 'auto') as InstallMode
if (!['auto', 'link', 'ci'].includes(baselineInstall))
  throw new Error('BENCH_BASELINE_INSTALL must be auto, link or ci')
const baselineEntry = process.env.BENCH_BASELINE_ENTRY ?? 'dist/service/server.js'
const targetNames = (
  process.env.BENCH_TARGETS ?? [...DEFAULT_TARGETS, ...(baselineRef === undefined ? [] : ['baseline'])].join(',')
)
  .split(',')
  .map((name) => name.trim())
  .filter((name) => name !== '')
for (const name of targetNames)
  if (!(TARGET_KEYS as readonly string[]).includes(name)) throw new Error(`BENCH_TARGETS: unknown target ${name}`)
const targets = new Set(targetNames as TargetKey[])
if (targets.has('baseline') && baselineRef === undefined)
  throw new Error('BENCH_TARGETS: target baseline needs BENCH_BASELINE_REF (a git ref)')
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const profileDir = process.env.BENCH_PROFILE ? resolve(process.env.BENCH_PROFILE) : undefined
const perfDir = process.env.BENCH_PERF ? resolve(process.env.BENCH_PERF) : undefined
if (perfDir !== undefined) mkdirSync(perfDir, { recursive: true })
const reportPath = resolve(REPO, process.env.BENCH_REPORT ?? 'docs/benchmarks.md')
const pinningAsked = process.env.BENCH_PINNING ?? 'on'
if (pinningAsked !== 'on' && pinningAsked !== 'off') throw new Error('BENCH_PINNING must be on or off')
assertLoopback(databaseUrl)
const counter: InstructionCounter = chooseCounter(process.env.BENCH_INSTRUCTIONS ?? 'auto')

// A token for this run only: never printed, never written (wrk gets it in its environment).
const token = randomBytes(24).toString('base64url')
const ids = new PlantIds()
const pinned = pinningAsked === 'on' && TASKSET !== undefined && availableParallelism() >= 2 && pinSelf(1)
const SERVER_CORE = pinned ? 0 : undefined
const GENERATOR_CORE = pinned ? 1 : undefined
const pinning = pinned
  ? 'each server process (all its threads) on CPU 0 (`taskset -c 0`), wrk and this script on CPU 1; PostgreSQL not pinned'
  : `none (${pinningAsked === 'off' ? 'BENCH_PINNING=off' : 'taskset or a second core missing'})`

/** The commit measured, and whether the service's sources differ from it (read-only git). */
function revision(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8', timeout: 5000 }).trim()
    const dirty = git('status', '--porcelain', '--', 'service', 'openapi.yaml') !== ''
    return `commit \`${git('rev-parse', '--short', 'HEAD')}\`${dirty ? ' with uncommitted changes in service/ or openapi.yaml' : ''}`
  } catch {
    return 'unknown commit (git unavailable)'
  }
}
const serviceRevision = revision()
const temporary: string[] = []
let exitCode = 0

/** Probe: one `POST /plants` with a new id, answered 200 with the Plant. */
async function probe(url: string): Promise<string | undefined> {
  const answer = await postJson(`${url}/plants`, jsonHeaders(token), ids.body())
  return answer.status === 200 && answer.body === EXPECTED_BODY
    ? undefined
    : `status ${answer.status}: ${answer.body.slice(0, 200)}`
}

function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-bench-'))
  temporary.push(dir)
  return dir
}

/** How each target runs: its script, its environment, and where it stores. */
interface Spec {
  readonly title: string
  readonly script: string
  readonly store: 'sqlite' | 'postgres' | undefined
  /** Whether it is the service (profiled with `BENCH_PROFILE`). */
  readonly service: boolean
  /** Its working directory (its repository's root). */
  readonly cwd: string
}

const SPECS: Record<TargetKey, Spec> = {
  raw: { title: 'raw `node:http` (ceiling)', script: RAW_CEILING, store: undefined, service: false, cwd: REPO },
  durable: {
    title: 'raw `node:http` + SQLite commit (SQLite durable ceiling)',
    script: RAW_CEILING,
    store: 'sqlite',
    service: false,
    cwd: REPO,
  },
  'durable-pg': {
    title: 'raw `node:http` + PostgreSQL commit (PostgreSQL durable ceiling)',
    script: RAW_CEILING,
    store: 'postgres',
    service: false,
    cwd: REPO,
  },
  floor: {
    title: 'Fastify + fastify-openapi-glue on the contract, nothing else (design floor)',
    script: DESIGN_FLOOR,
    store: undefined,
    service: false,
    cwd: REPO,
  },
  unstored: {
    title: 'service, database write skipped (ablation)',
    script: UNSTORED_SERVICE,
    store: undefined,
    service: true,
    cwd: REPO,
  },
  embedded: { title: 'service, embedded store', script: SERVICE, store: 'sqlite', service: true, cwd: REPO },
  postgres: { title: 'service, PostgreSQL', script: SERVICE, store: 'postgres', service: true, cwd: REPO },
  // Its script and working directory are set once the baseline is built (`prepareBaseline` below).
  baseline: {
    title: `service at \`${baselineRef}\`, embedded store`,
    script: '',
    store: 'sqlite',
    service: true,
    cwd: REPO,
  },
  traced: {
    title: 'service, embedded store, every create traced (OTLP/HTTP)',
    script: SERVICE,
    store: 'sqlite',
    service: true,
    cwd: REPO,
  },
}
const baselineDir = targets.has('baseline') ? baselinePlace(REPO) : undefined
let baseline: Baseline | undefined

/**
 * Where the traced target exports its spans: an OTLP/HTTP endpoint of this process
 * that reads each export and answers it with an empty (successful) response, so the
 * service's cost of tracing is measured, not a collector's.
 */
const spanSink = createServer((request, response) => {
  request.resume()
  request.on('end', () => response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end())
})
spanSink.listen(0, '127.0.0.1')
await once(spanSink, 'listening')
spanSink.unref()
const SPAN_SINK = `http://127.0.0.1:${(spanSink.address() as { port: number }).port}`

/**
 * Environment of a target. The service runs as it ships (`NODE_ENV=production`, the
 * default log level), but its per-token rate limit is raised far above
 * what one run sends (not turned off), so its hook still runs on every request and
 * is measured, but a single-token load is not answered 429.
 */
function environment(key: TargetKey, extra: Record<string, string> = {}): Record<string, string> {
  const spec = SPECS[key]
  const storage: Record<string, string> = {}
  if (spec.store === 'postgres') storage.DATABASE_URL = databaseUrl
  if (spec.store === 'sqlite' || spec.service) storage.DATA_DIR = freshDataDir()
  const service: Record<string, string> = spec.service
    ? { NODE_ENV: 'production', RATE_LIMIT_MAX: '1000000000', ...SERVICE_ENVIRONMENT }
    : {}
  const tracing: Record<string, string> = key === 'traced' ? { OTEL_EXPORTER_OTLP_ENDPOINT: SPAN_SINK } : {}
  return { PLANT_STORE_TOKENS: token, ...service, ...storage, ...tracing, ...extra }
}

/** What every wrk run against `server` shares: target, token, ids, connections, pinning. */
const loadTarget = (server: ServerProcess) => ({
  url: server.url,
  token,
  ids,
  connections,
  ...(GENERATOR_CORE === undefined ? {} : { core: GENERATOR_CORE, taskset: TASKSET! }),
})
const load = (server: ServerProcess, duration: number): Promise<LoadSummary> =>
  runLoad({ ...loadTarget(server), duration })

type Measured = Pick<TargetResult, 'load' | 'warmupP99Ms' | 'cpu' | 'instructions' | 'peakRssMb' | 'store' | 'exited'>

/** Warm-up, then the measured run: wrk's counts, the server's CPU time (and instructions with perf) over it. */
async function measure(server: ServerProcess, recording: string | undefined): Promise<Measured> {
  const warmup = warmupS > 0 ? await load(server, warmupS) : undefined
  const storeBefore = await storeTotals(server.url)
  const stopPerf = counter.kind === 'perf' ? perfCount(server.pid) : undefined
  const stopRecording = recording === undefined ? undefined : perfRecord(server.pid, `${recording}.data`)
  if (stopPerf !== undefined || stopRecording !== undefined) await new Promise((resolve) => setTimeout(resolve, 200)) // perf attaches
  const cpuBefore = server.cpuTimes()
  // Sampled during the run too: a process that exits as wrk closes its connections keeps its peak.
  let peakRssMb = server.peakRssMb()
  const sampler = setInterval(() => (peakRssMb = server.peakRssMb() ?? peakRssMb), 250)
  let measured: LoadSummary
  try {
    measured = await load(server, durationS)
  } finally {
    clearInterval(sampler)
  }
  const cpuAfter = server.cpuTimes()
  peakRssMb = server.peakRssMb() ?? peakRssMb
  const instructionCount = await stopPerf?.()
  await stopRecording?.()
  const store = storeActivity(storeBefore, await storeTotals(server.url))
  const cpu =
    cpuBefore === undefined || cpuAfter === undefined
      ? undefined
      : { user: cpuAfter.user - cpuBefore.user, system: cpuAfter.system - cpuBefore.system }
  const instructions: Instructions | undefined =
    instructionCount === undefined || measured.responses === 0
      ? undefined
      : { perRequest: instructionCount / measured.responses, how: 'perf' }
  if (recording !== undefined) {
    const cpuUs = cpuPerRequest(cpu, measured.responses)?.total.toFixed(1) ?? 'unknown'
    const header = `# ${recording}.data: ${measured.responses} responses in ${durationS} s; server CPU ${cpuUs} µs per request; shares are % of the samples`
    writeFileSync(`${recording}.txt`, perfSummary(`${recording}.data`, header))
  }
  const ended = server.exitStatus()
  const exited =
    ended === undefined ? undefined : `${ended}: ${server.output().trim().replace(/\s+/g, ' ').slice(-300)}`
  return {
    load: measured,
    warmupP99Ms: warmup?.latencyMs.p99,
    cpu,
    peakRssMb,
    ...(instructions === undefined ? {} : { instructions }),
    ...(store === undefined ? {} : { store }),
    ...(exited === undefined ? {} : { exited }),
  }
}

/** Rows stored with the measured run's ids, for the targets that store. */
async function storedRows(
  key: TargetKey,
  env: Record<string, string>,
  measured: LoadSummary,
): Promise<number | undefined> {
  const store = SPECS[key].store
  // The baseline's store may be laid out otherwise than the working tree's: uncounted then, not failed.
  if (key === 'baseline') {
    try {
      return countSqliteRows(env.DATA_DIR!, measured.firstId, measured.idCount)
    } catch (error) {
      process.stderr.write(`${SPECS[key].title}: its stored plants not counted: ${(error as Error).message}\n`)
      return undefined
    }
  }
  if (store === 'sqlite') return countSqliteRows(env.DATA_DIR!, measured.firstId, measured.idCount)
  if (store === 'postgres') return countPostgresRows(databaseUrl, measured.firstId, measured.idCount)
  return undefined
}

/**
 * Starts a target, measures it, stops it, and starts it again on the data it left (ready time).
 * @param round - which round this is, counted from 1 (for the progress lines).
 */
async function runTarget(key: TargetKey, round: number): Promise<TargetResult> {
  const { title, script, store, service, cwd } = SPECS[key]
  if (store === 'postgres') {
    const unavailable = await postgresUnavailable(databaseUrl)
    if (unavailable !== undefined) return { key, title, notRun: unavailable }
  }
  process.stdout.write(`${title}, round ${round} of ${roundCount}: ${warmupS} s warm-up, ${durationS} s measured …\n`)
  // Earlier targets' dirty pages would otherwise be written back during this one's fsyncs.
  execFileSync('sync', { timeout: 120_000 })
  const env = environment(key)
  const nodeOptions = service ? SERVICE_NODE_OPTIONS : []
  const nodeArgs = [
    ...nodeOptions,
    ...(profileDir === undefined || !service ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, key)}`]),
    ...(perfDir === undefined ? [] : perfNodeOptions(join(perfDir, `${key}-${round}.v8.log`))),
  ]
  try {
    const first = await startServer({ nodeArgs, script, cwd, env, port: await freePort(), core: SERVER_CORE, probe })
    let measured: Measured
    const readyRssMb = first.rssMb()
    try {
      if (store === 'postgres' && !(await storedInPostgres(databaseUrl, ids.base + ids.issued - 1n))) {
        return {
          key,
          title,
          notRun: 'it answered, but its row is not in PostgreSQL: DATABASE_URL is not supported by this build',
        }
      }
      measured = await measure(first, perfDir === undefined ? undefined : join(perfDir, `${key}-${round}`))
    } finally {
      const stopped = await first.stop()
      if (stopped.killed) process.stderr.write(`${title}: did not stop within 10 s of SIGTERM; killed\n`)
    }
    const rows = await storedRows(key, env, measured.load!)
    const again = await startServer({
      nodeArgs: nodeOptions,
      script,
      cwd,
      env,
      port: await freePort(),
      core: SERVER_CORE,
      probe,
    })
    await again.stop()
    return {
      key,
      title,
      readyRssMb,
      ...measured,
      readyMs: again.readyMs,
      ...(rows === undefined ? {} : { storedRows: rows }),
    }
  } catch (error) {
    return { key, title, notRun: `failed: ${(error as Error).message.replace(/\s+/g, ' ').slice(0, 300)}` }
  }
}

/**
 * Instructions per request under callgrind: the target starts with instrumentation
 * off (start-up is not counted), then one run of the same load for the rest of the
 * budget, its counters dumped every round; the figure comes from the second half of
 * the responses. One continuous run, so no request is cut off between rounds.
 */
async function callgrindRun(key: TargetKey): Promise<Instructions | string> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-callgrind-'))
  temporary.push(dir)
  // Under valgrind the event loop lags by design; load shedding would answer 503.
  const env = environment(key, SPECS[key].service ? { LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '3600000' } : {})
  const started = performance.now()
  const server = await startServer({
    wrapper: callgrindWrapper(dir),
    nodeArgs: SPECS[key].service ? SERVICE_NODE_OPTIONS : [],
    script: SPECS[key].script,
    cwd: SPECS[key].cwd,
    env,
    port: await freePort(),
    core: SERVER_CORE,
    probe,
    readyTimeoutMs: 600_000,
  })
  try {
    const seconds = Math.floor(callgrindBudgetS - (performance.now() - started) / 1000)
    if (seconds < 2 * callgrindRoundS) return `start-up under valgrind took the budget (${callgrindBudgetS} s)`
    callgrindControl(server.pid, 'on', dir)
    callgrindControl(server.pid, 'zero', dir)
    let answered = 0
    let counted = 0
    const rounds: Round[] = []
    const timer = setInterval(() => {
      const now = answered
      rounds.push({ instructions: callgrindControl(server.pid, 'dump', dir)!, responses: now - counted })
      counted = now
      const last = rounds.at(-1)!
      process.stdout.write(
        `  callgrind round ${rounds.length}: ${last.responses} requests, ${last.responses === 0 ? 'n/a' : Math.round(last.instructions / last.responses)} instructions per request\n`,
      )
    }, callgrindRoundS * 1000)
    try {
      await runLoad({
        ...loadTarget(server),
        duration: seconds,
        timeoutS: 60,
        onProgress: (responses) => (answered = responses),
      })
    } finally {
      clearInterval(timer)
    }
    const figure = callgrindFigure(rounds)
    return figure === undefined
      ? 'fewer than two rounds of answered requests under callgrind'
      : { how: 'callgrind', ...figure }
  } finally {
    await server.stop(30_000)
  }
}

async function soak(): Promise<string> {
  process.stdout.write(`soak: ${soakS} s at ${soakRate} req/s against the embedded service …\n`)
  const server = await startServer({
    nodeArgs: SERVICE_NODE_OPTIONS,
    script: SERVICE,
    env: environment('embedded'),
    port: await freePort(),
    core: SERVER_CORE,
    probe,
  })
  try {
    const loadAtStart = loadavg()[0] ?? 0
    const samples = await runSoak({ server, token, ids, connections: soakConnections, seconds: soakS, rate: soakRate })
    const loadAverage = [loadAtStart, loadavg()[0] ?? 0] as const
    return renderSoak(
      new Date(),
      { connections: soakConnections, seconds: soakS, rate: soakRate },
      samples,
      `Service: ${serviceRevision}. Pinning: ${pinning}`,
      loadAverage,
    )
  } catch (error) {
    exitCode = 1
    return `Run ${new Date().toISOString()} (${soakS} s at ${soakRate} req/s): **failed**: ${(error as Error).message.replace(/\s+/g, ' ')}`
  } finally {
    await server.stop()
  }
}

/** Removes the run's temporary directories, the baseline's worktree and its PostgreSQL rows (its id range only). */
async function cleanUp(): Promise<void> {
  killAll()
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true })
  if (baselineDir !== undefined) removeBaseline(baselineDir)
  if (
    (targets.has('postgres') || targets.has('durable-pg')) &&
    (await postgresUnavailable(databaseUrl)) === undefined
  ) {
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

function summary(result: TargetResult, round: number): string {
  const run = result.load
  const which = `  ${result.key}, round ${round} of ${roundCount}:`
  if (run === undefined) return `${which} not run: ${result.notRun}\n`
  const perRequest = cpuPerRequest(result.cpu, run.responses)
  const cpu = perRequest === undefined ? 'n/a' : `${perRequest.total.toFixed(1)} µs`
  return (
    `${which} ${Math.round(run.requestsPerSecond)} req/s, p50 ${run.latencyMs.p50.toFixed(2)} ms, p99 ${run.latencyMs.p99.toFixed(2)} ms, ` +
    `statuses ${JSON.stringify(run.statuses)}, errors ${run.errors}, wrong bodies ${run.wrongBodies}` +
    (result.storedRows === undefined ? '' : `, stored ${result.storedRows}`) +
    `, server CPU ${cpu} per request, wrk CPU ${run.generatorCpuPercent.toFixed(0)} %, peak RSS ${result.peakRssMb?.toFixed(1)} MB, ready on existing data ${result.readyMs?.toFixed(0)} ms` +
    (result.store === undefined
      ? ''
      : `, ${result.store.transactions} store transactions of ${result.store.meanBatch.toFixed(1)} plants`) +
    (result.exited === undefined ? '\n' : `; EXITED unasked (${result.exited})\n`)
  )
}

/**
 * Every round: each selected target once, in {@link roundOrder} (the working tree and
 * the baseline swap places every other round); a selected target that fails
 * (PostgreSQL aside) fails the run.
 */
async function runRounds(): Promise<TargetResult[][]> {
  const rounds: TargetResult[][] = []
  for (let round = 1; round <= roundCount; round++) {
    const results: TargetResult[] = []
    for (const key of roundOrder(round, targets)) {
      const result = await runTarget(key, round)
      results.push(result)
      process.stdout.write(summary(result, round))
      if (SPECS[key].store !== 'postgres' && result.load === undefined) exitCode = 1
    }
    rounds.push(results)
  }
  return rounds
}

/**
 * Instructions per request under callgrind: one separate run per target measured in
 * any round (not one per round); its figure is set on that target's result in every round.
 */
async function countUnderCallgrind(rounds: Rounds): Promise<Rounds> {
  let counted = rounds
  for (const key of TARGET_KEYS) {
    const measured = rounds.flat().find((result) => result.key === key && result.load !== undefined)
    if (measured === undefined) continue
    process.stdout.write(
      `${measured.title}: instructions under callgrind, callgrind rounds of ${callgrindRoundS} s, at most ${callgrindBudgetS} s …\n`,
    )
    const instructions = await callgrindRun(key).catch((error: Error) => `failed: ${error.message.slice(0, 300)}`)
    if (typeof instructions === 'string') process.stdout.write(`  ${instructions}\n`)
    else
      counted = counted.map((round) =>
        round.map((result) => (result.key === key && result.load !== undefined ? { ...result, instructions } : result)),
      )
  }
  return counted
}

/**
 * One start of each selected target to its first 200, unmeasured, before the rounds:
 * Node's compile cache (the image's `NODE_COMPILE_CACHE`) and the page cache then hold
 * every target's files alike, so no target's first round pays for a cold start (a
 * freshly built baseline's first ready took 8–10 s against 2.2–2.4 later).
 */
async function prime(): Promise<void> {
  process.stdout.write('one unmeasured start of each target …\n')
  for (const key of roundOrder(1, targets)) {
    const spec = SPECS[key]
    if (spec.store === 'postgres' && (await postgresUnavailable(databaseUrl)) !== undefined) continue
    try {
      const server = await startServer({
        nodeArgs: spec.service ? SERVICE_NODE_OPTIONS : [],
        script: spec.script,
        cwd: spec.cwd,
        env: environment(key),
        port: await freePort(),
        core: SERVER_CORE,
        probe,
      })
      await server.stop()
    } catch {
      // Its rounds report why.
    }
  }
}

/** How the baseline was made, for the report's settings. */
function baselineWords(built: Baseline): string {
  return `commit \`${built.commit}\`, checked out into a temporary git worktree (\`git worktree add --detach\`, removed afterwards), its dependencies ${built.how}, built with its own \`npm run build\` (${Math.round(built.seconds)} s in all), run from \`${baselineEntry}\``
}

/** The A/B verdicts on stdout, as the report has them. */
function printAb(rounds: Rounds): void {
  if (baseline === undefined) return
  process.stdout.write(
    `working tree against ${baseline.ref}${baseline.ref.startsWith(baseline.commit) ? '' : ` (${baseline.commit})`}, median (lowest–highest) of ${rounds.length} rounds:\n`,
  )
  for (const figure of AB_FIGURES) {
    const verdict = abVerdict(figure, rounds)
    process.stdout.write(
      `  ${figure.figure}: ${verdict.measured}, ${figure.threshold}: ${verdict.met === undefined ? 'not measured' : verdict.met ? 'met' : 'NOT MET'}\n`,
    )
  }
}

try {
  if (baselineDir !== undefined) {
    const cache = resolve(process.env.BENCH_BASELINE_CACHE ?? join(tmpdir(), 'plant-store-baseline-deps'))
    baseline = prepareBaseline(baselineDir, baselineRef!, baselineInstall, baselineEntry, cache, (line) =>
      process.stdout.write(`${line}\n`),
    )
    SPECS.baseline = {
      ...SPECS.baseline,
      title: `service at \`${baseline.ref}\`${baseline.ref.startsWith(baseline.commit) ? '' : ` (${baseline.commit})`}, embedded store`,
      script: baseline.script,
      cwd: baseline.root,
    }
  }
  await prime()
  const date = new Date()
  const loadAtStart = loadavg()[0] ?? 0
  const statAtStart = readFileSync('/proc/stat', 'utf8')
  const roundsStarted = performance.now()
  let rounds: Rounds = await runRounds()
  const roundsSeconds = (performance.now() - roundsStarted) / 1000
  const loadAverage = [loadAtStart, loadavg()[0] ?? 0] as const
  const stolen = stolenShares(statAtStart, readFileSync('/proc/stat', 'utf8'))
  if (counter.kind === 'callgrind') rounds = await countUnderCallgrind(rounds)
  const soakSection = soakS > 0 ? await soak() : undefined
  const instructions =
    counter.kind === 'perf'
      ? '`perf stat -e instructions -p <server pid>` over the measured run (user and kernel, all threads) ÷ responses'
      : counter.kind === 'callgrind'
        ? `after the rounds, one separate run of each target under \`valgrind --tool=callgrind\` (its figure stands in every round; user space only, all threads; start-up not counted), one run of the same load for ${callgrindBudgetS} s (start-up included), counters dumped every ${callgrindRoundS} s (callgrind rounds); instructions of the callgrind rounds in the second half of the responses (the first half warms the JIT up) ÷ their responses, with the lowest and highest callgrind round`
        : `not counted: ${'why' in counter ? counter.why : 'unknown'}`
  const settings: RunSettings = {
    durationS,
    warmupS,
    connections,
    pinning,
    idBase: ids.base,
    databaseUrl,
    revision: serviceRevision,
    serviceNodeOptions: SERVICE_NODE_OPTIONS,
    serviceEnvironment: SERVICE_ENV_SETTINGS,
    profiled: profileDir !== undefined || perfDir !== undefined,
    loadAverage,
    stolen,
    instructions,
    roundsSeconds,
    baseline: baseline === undefined ? undefined : { ref: baseline.ref, how: baselineWords(baseline) },
  }
  writeReport(reportPath, renderResults(date, settings, rounds), soakSection)
  printAb(rounds)
  process.stdout.write(`report: ${reportPath}\n`)
} catch (error) {
  process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`)
  exitCode = 1
} finally {
  await cleanUp()
}
process.exit(exitCode)
