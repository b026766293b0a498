/**
 * Instructions per request of a server process: a cost figure that the machine's
 * other load barely moves, unlike CPU time.
 *
 * Two ways, chosen by `BENCH_INSTRUCTIONS`:
 * - `perf`: `perf stat -e instructions -p <pid>` (Debian's `linux-perf`) over the
 *   measured run itself; user and kernel instructions of every thread. Needs a
 *   hardware counter: virtual machines often have none (`<not supported>`).
 * - `callgrind`: a separate run of each target under `valgrind --tool=callgrind`
 *   with instrumentation switched on only after start-up; rounds of load until two
 *   in a row agree within {@link SETTLED}. User-space instructions only (the
 *   kernel's TCP work is not counted), of every thread. Node is 50–100 times slower
 *   under valgrind, and its JIT compiles for the first tens of thousands of
 *   requests, during which the count per request is several times the settled one:
 *   this takes minutes per target.
 * - `auto` (default): `perf` when the machine counts instructions, else none.
 *
 * @module
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** Consecutive callgrind rounds agreeing within this relative difference are settled. */
export const SETTLED = 0.02

/** How instructions are counted in this run, or why they are not. */
export type InstructionCounter = { readonly kind: 'perf' | 'callgrind' } | { readonly kind: 'none'; readonly why: string }

/** Parses `perf stat -x,` output: the count of `event`, or `undefined` when it was not counted. */
export function parsePerfCount(stderr: string, event: string): number | undefined {
  const line = stderr.split('\n').find((text) => text.split(',')[2]?.startsWith(event))
  const value = Number(line?.split(',')[0])
  return line === undefined || !Number.isFinite(value) ? undefined : value
}

/** `undefined` when `perf stat -e instructions` counts on this machine, else why not. */
function perfUnavailable(): string | undefined {
  const result = spawnSync('perf', ['stat', '-x,', '-e', 'instructions', 'true'], { encoding: 'utf8', timeout: 10_000 })
  if (result.error !== undefined) return (result.error as { code?: string }).code === 'ENOENT' ? 'perf is not installed (Debian: linux-perf)' : `perf failed: ${result.error.message}`
  if (parsePerfCount(result.stderr, 'instructions') !== undefined) return undefined
  return `\`perf stat -e instructions\` answers ${result.stderr.split('\n').find((line) => line.includes('instructions'))?.split(',')[0] ?? 'nothing'} (no hardware counter here)`
}

function valgrindMissing(): string | undefined {
  return ['/usr/bin/valgrind', '/usr/bin/callgrind_control'].every((path) => existsSync(path)) ? undefined : 'valgrind is not installed (Debian: valgrind)'
}

/**
 * Chooses the counter for `BENCH_INSTRUCTIONS` (`auto`, `perf`, `callgrind`, `off`).
 * @throws when a counter is asked for by name and cannot run here.
 */
export function chooseCounter(asked: string): InstructionCounter {
  if (asked === 'off') return { kind: 'none', why: 'not asked (BENCH_INSTRUCTIONS=off)' }
  if (asked === 'callgrind') {
    const missing = valgrindMissing()
    if (missing !== undefined) throw new Error(`BENCH_INSTRUCTIONS=callgrind: ${missing}`)
    return { kind: 'callgrind' }
  }
  const why = perfUnavailable()
  if (asked === 'perf' && why !== undefined) throw new Error(`BENCH_INSTRUCTIONS=perf: ${why}`)
  if (asked !== 'perf' && asked !== 'auto') throw new Error('BENCH_INSTRUCTIONS must be auto, perf, callgrind or off')
  return why === undefined ? { kind: 'perf' } : { kind: 'none', why: `${why}; \`BENCH_INSTRUCTIONS=callgrind\` counts them under valgrind (minutes per target)` }
}

/**
 * Starts counting the instructions of process `pid` (all threads, user and kernel).
 * @returns a function that stops counting and resolves the count, or `undefined`
 *   when perf counted nothing.
 */
export function perfCount(pid: number): () => Promise<number | undefined> {
  const child = spawn('perf', ['stat', '-x,', '-e', 'instructions', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return async () => {
    child.kill('SIGINT')
    await exited
    return parsePerfCount(stderr, 'instructions')
  }
}

/** The command that runs node under callgrind, instrumentation off until {@link callgrindControl} turns it on. */
export function callgrindWrapper(outputDir: string): string[] {
  return ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(outputDir, 'callgrind.out.%p')}`]
}

/**
 * Sends a command to a process running under callgrind (`callgrind_control`):
 * `on` switches instrumentation on, `zero` zeroes the counters, `dump` writes them.
 * @returns for `dump`, the instructions counted since the last zero or dump.
 */
export function callgrindControl(pid: number, command: 'on' | 'zero' | 'dump', outputDir: string): number | undefined {
  const flag = { on: ['-i', 'on'], zero: ['-z'], dump: ['-d'] }[command]
  execFileSync('callgrind_control', [...flag, String(pid)], { stdio: 'ignore', timeout: 60_000 })
  if (command !== 'dump') return undefined
  const dumps = readdirSync(outputDir)
    .filter((name) => name.startsWith(`callgrind.out.${pid}.`))
    .sort((a, b) => Number(a.slice(a.lastIndexOf('.') + 1)) - Number(b.slice(b.lastIndexOf('.') + 1)))
  const last = dumps.at(-1)
  if (last === undefined) throw new Error('callgrind wrote no dump')
  const summary = /^summary: (\d+)/m.exec(readFileSync(join(outputDir, last), 'utf8'))
  if (summary === null) throw new Error(`no summary in ${last}`)
  return Number(summary[1])
}

/** Whether the last two values agree within {@link SETTLED}. */
export function settled(values: readonly number[]): boolean {
  if (values.length < 2) return false
  const [a, b] = [values.at(-2)!, values.at(-1)!]
  return Math.abs(a - b) <= SETTLED * Math.max(a, b)
}
