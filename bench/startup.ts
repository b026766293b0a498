/**
 * Start-up time, "ready on existing data": milliseconds from spawn to the first 200
 * to `POST /plants`, as `run.ts` measures it, for several builds or targets started
 * alternately (A, B, A, B, …), so a busy machine slows each alike.
 *
 * Usage: `node dist/bench/startup.js <runs> <name>=<script> …`
 *
 * A script named `server.js` is the service: it runs with the image's Node options
 * and runtime settings of its `ENV` (`image.ts` reads them from the Dockerfile), `NODE_ENV=production`,
 * and one data directory per target that already holds `STARTUP_ROWS` plants (default 100,000),
 * opened once before the runs. Any other script (the design floor, the raw
 * ceiling) runs as `run.ts` runs it. Every target is started once before the
 * measured runs, so Node's compile cache is warm for all of them alike. Each child
 * is pinned to CPU 0 when `taskset` exists (`STARTUP_PINNING=off` to not).
 *
 * Prints, per target, the median and range of the ready time and of the CPU time
 * the process used until then (user + system: steadier than the wall clock on a
 * shared machine), and the per-pair difference of every target from the one before it.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { SERVICE_ENVIRONMENT, SERVICE_NODE_OPTIONS } from './image.ts'
import { EXPECTED_BODY, jsonHeaders, PlantIds } from './load.ts'
import { freePort, postJson, startServer, TASKSET } from './process.ts'
import { openSqliteFile, SQLITE_FILE } from '../service/store/sqlite.ts'

const [runsArgument, ...targetArguments] = process.argv.slice(2)
const runs = Number(runsArgument)
if (!Number.isInteger(runs) || runs < 1 || targetArguments.length === 0) {
  process.stderr.write('usage: startup.js <runs> <name>=<script> …\n')
  process.exit(2)
}
const rows = Number(process.env.STARTUP_ROWS ?? 100_000)
const core = process.env.STARTUP_PINNING === 'off' || TASKSET === undefined ? undefined : 0
const token = randomBytes(24).toString('base64url')
const ids = new PlantIds()
const temporary: string[] = []
process.on('exit', () => temporary.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

interface Target {
  readonly name: string
  readonly script: string
  readonly nodeArgs: readonly string[]
  readonly env: Record<string, string>
  readonly readyMs: number[]
  /** CPU time (user + system, all threads) until ready: steadier than the wall clock on a shared machine. */
  readonly cpuMs: number[]
}

/** A data directory holding `rows` plants, migrated by a first start of the service. */
function seeded(dataDir: string): void {
  const database = openSqliteFile(join(dataDir, SQLITE_FILE))
  const insert = database.prepare('insert into plant (id, name, tag) values (?, ?, ?) on conflict do nothing')
  database.transaction(() => {
    for (let index = 0; index < rows; index++)
      insert.run(BigInt(index + 1), `plant ${index}`, index % 2 === 0 ? 'indoor' : null)
  })()
  database.close()
}

const targets: Target[] = targetArguments.map((argument) => {
  const [name, script] = argument.split('=') as [string, string]
  const service = basename(script) === 'server.js'
  const env: Record<string, string> = { PLANT_STORE_TOKENS: token }
  if (service)
    Object.assign(env, {
      NODE_ENV: 'production',
      ...SERVICE_ENVIRONMENT,
      DATA_DIR: mkdtempSync(join(tmpdir(), 'plant-store-startup-')),
    })
  if (env.DATA_DIR !== undefined) temporary.push(env.DATA_DIR)
  return { name, script: resolve(script), nodeArgs: service ? SERVICE_NODE_OPTIONS : [], env, readyMs: [], cpuMs: [] }
})

async function probe(url: string): Promise<string | undefined> {
  const answer = await postJson(`${url}/plants`, jsonHeaders(token), ids.body())
  return answer.status === 200 && answer.body === EXPECTED_BODY
    ? undefined
    : `status ${answer.status}: ${answer.body.slice(0, 200)}`
}

async function start(target: Target): Promise<{ readyMs: number; cpuMs: number }> {
  const server = await startServer({
    nodeArgs: target.nodeArgs,
    script: target.script,
    env: target.env,
    port: await freePort(),
    core,
    probe,
  })
  const cpu = server.cpuTimes()!
  await server.stop()
  return { readyMs: server.readyMs, cpuMs: (cpu.user + cpu.system) * 1000 }
}

// A first start of each: migrates the service's store (then seeded) and warms the compile cache.
for (const target of targets) {
  await start(target)
  if (target.env.DATA_DIR !== undefined) seeded(target.env.DATA_DIR)
  await start(target)
}
for (let run = 0; run < runs; run++) {
  // Alternate the order too, so neither target always follows the other.
  const order = run % 2 === 0 ? targets : [...targets].reverse()
  for (const target of order) {
    const { readyMs, cpuMs } = await start(target)
    target.readyMs.push(readyMs)
    target.cpuMs.push(cpuMs)
  }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}
const ms = (value: number) => value.toFixed(0)
const summary = (values: readonly number[]) =>
  `median ${ms(median(values))} ms, range ${ms(Math.min(...values))}–${ms(Math.max(...values))} ms`
for (const target of targets) {
  process.stdout.write(
    `${target.name}: ready ${summary(target.readyMs)}; CPU ${summary(target.cpuMs)}; N ${target.readyMs.length}\n`,
  )
}
for (const [index, target] of targets.entries()) {
  const before = targets[index - 1]
  if (before === undefined) continue
  const difference = (key: 'readyMs' | 'cpuMs') => summary(target[key].map((value, run) => value - before[key][run]!))
  process.stdout.write(
    `${target.name} − ${before.name}, per pair: ready ${difference('readyMs')}; CPU ${difference('cpuMs')}\n`,
  )
}
process.stdout.write(`(${rows} plants in each store; ${core === undefined ? 'not pinned' : 'each child on CPU 0'})\n`)
