/**
 * Instructions per request of a server process: a cost figure that the machine's
 * other load barely moves, unlike CPU time.
 *
 * Two ways, chosen by `BENCH_INSTRUCTIONS`:
 * - `perf`: `perf stat -e instructions -p <pid>` (Debian's `linux-perf`) over the
 *   measured run itself; user and kernel instructions of every thread. Needs a
 *   hardware counter: virtual machines often have none (`<not supported>`).
 * - `callgrind`: a separate run of each target under `valgrind --tool=callgrind`
 *   with instrumentation switched on only after start-up, then rounds of load for
 *   a fixed time; the figure is {@link callgrindFigure} of the rounds. User-space
 *   instructions only (the kernel's TCP work is not counted), of every thread. Node
 *   is 50–100 times slower under valgrind, and its JIT compiles for the first tens
 *   of thousands of requests, during which the count per request is several times
 *   the settled one; a major GC in one round and not the next moves a round's count
 *   by ±15 %: this takes minutes per target.
 * - `auto` (default): `perf` when the machine counts instructions, else none.
 *
 * @module
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** How instructions are counted in this run, or why they are not. */
export type InstructionCounter =
  { readonly kind: 'perf' | 'callgrind' } | { readonly kind: 'none'; readonly why: string }

/** Parses `perf stat -x,` output: the count of `event`, or `undefined` when it was not counted. */
export function parsePerfCount(stderr: string, event: string): number | undefined {
  const line = stderr.split('\n').find((text) => text.split(',')[2]?.startsWith(event))
  const value = Number(line?.split(',')[0])
  return line === undefined || !Number.isFinite(value) ? undefined : value
}

/** `undefined` when `perf stat -e instructions` counts on this machine, else why not. */
function perfUnavailable(): string | undefined {
  const result = spawnSync('perf', ['stat', '-x,', '-e', 'instructions', 'true'], { encoding: 'utf8', timeout: 10_000 })
  if (result.error !== undefined)
    return (result.error as { code?: string }).code === 'ENOENT'
      ? 'perf is not installed (Debian: linux-perf)'
      : `perf failed: ${result.error.message}`
  if (parsePerfCount(result.stderr, 'instructions') !== undefined) return undefined
  return `\`perf stat -e instructions\` answers \`${
    result.stderr
      .split('\n')
      .find((line) => line.includes('instructions'))
      ?.split(',')[0] ?? 'nothing'
  }\` (no hardware counter here)`
}

function valgrindMissing(): string | undefined {
  return ['/usr/bin/valgrind', '/usr/bin/callgrind_control'].every((path) => existsSync(path))
    ? undefined
    : 'valgrind is not installed (Debian: valgrind)'
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
  if (asked !== 'perf' && asked !== 'auto') throw new Error('BENCH_INSTRUCTIONS must be auto, perf, callgrind or off')
  const why = perfUnavailable()
  if (why === undefined) return { kind: 'perf' }
  if (asked === 'perf') throw new Error(`BENCH_INSTRUCTIONS=perf: ${why}`)
  return {
    kind: 'none',
    why: `${why}; \`BENCH_INSTRUCTIONS=callgrind\` counts them under valgrind, tens of minutes per target`,
  }
}

/**
 * Starts counting the instructions of process `pid` (all threads, user and kernel).
 * @returns a function that stops counting and resolves the count, or `undefined`
 *   when perf counted nothing.
 */
export function perfCount(pid: number): () => Promise<number | undefined> {
  const child = spawn('perf', ['stat', '-x,', '-e', 'instructions', '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return async () => {
    child.kill('SIGINT')
    await exited
    return parsePerfCount(stderr, 'instructions')
  }
}

/**
 * The command that runs node under callgrind, instrumentation off until
 * {@link callgrindControl} turns it on; its control pipes live in `outputDir`.
 */
export function callgrindWrapper(outputDir: string): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    '--instr-atstart=no',
    `--vgdb-prefix=${join(outputDir, 'vgdb')}`,
    `--callgrind-out-file=${join(outputDir, 'callgrind.out.%p')}`,
  ]
}

/**
 * Sends a command to a process running under callgrind (`callgrind_control`):
 * `on` switches instrumentation on, `zero` zeroes the counters, `dump` writes them.
 * The process must have been started with `HOST=127.0.0.1` and without `USER` and
 * `LOGNAME`, as `startServer` does: the control pipes' names carry them.
 * @returns for `dump`, the instructions counted since the last zero or dump.
 * @throws when the process did not take the command.
 */
export function callgrindControl(pid: number, command: 'on' | 'zero' | 'dump', outputDir: string): number | undefined {
  const flag = { on: ['-i', 'on'], zero: ['-z'], dump: ['-d'] }[command]
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOST: '127.0.0.1' }
  const answer = spawnSync('callgrind_control', [`--vgdb-prefix=${join(outputDir, 'vgdb')}`, ...flag, String(pid)], {
    encoding: 'utf8',
    env,
    timeout: 60_000,
  })
  // It prints OK and exits 0 even when it reached no process; the failure is on stderr.
  if (answer.status !== 0 || /error|failed/i.test(answer.stderr))
    throw new Error(
      `callgrind_control ${flag.join(' ')}: ${(answer.stderr || String(answer.error)).trim().slice(0, 300)}`,
    )
  if (command !== 'dump') return undefined
  const dumps = readdirSync(outputDir)
    .filter((name) => name.startsWith(`callgrind.out.${pid}.`))
    .sort((a, b) => Number(a.slice(a.lastIndexOf('.') + 1)) - Number(b.slice(b.lastIndexOf('.') + 1)))
  const last = dumps.at(-1)
  if (last === undefined)
    throw new Error(`callgrind wrote no dump for process ${pid} (${readdirSync(outputDir).join(', ')})`)
  const summary = /^summary: (\d+)/m.exec(readFileSync(join(outputDir, last), 'utf8'))
  if (summary === null) throw new Error(`no summary in ${last}`)
  return Number(summary[1])
}

/** One callgrind round: instructions counted, responses answered. */
export interface Round {
  readonly instructions: number
  readonly responses: number
}

/**
 * Instructions per request over the second half of the requests (the first half
 * warms the JIT up): the sum of the instructions of the rounds that started after
 * half of all responses ÷ the sum of their responses, and the range of those rounds.
 * @returns `undefined` without at least two rounds.
 */
export function callgrindFigure(
  rounds: readonly Round[],
): { perRequest: number; range: [number, number]; responses: number } | undefined {
  const total = rounds.reduce((sum, round) => sum + round.responses, 0)
  let before = 0
  const counted = rounds.filter((round) => {
    const late = before >= total / 2
    before += round.responses
    return late && round.responses > 0
  })
  if (rounds.length < 2 || counted.length === 0) return undefined
  const responses = counted.reduce((sum, round) => sum + round.responses, 0)
  const each = counted.map((round) => round.instructions / round.responses)
  return {
    perRequest: counted.reduce((sum, round) => sum + round.instructions, 0) / responses,
    range: [Math.min(...each), Math.max(...each)],
    responses,
  }
}
