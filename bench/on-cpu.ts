/**
 * On-CPU profiles of the benchmark's targets (`BENCH_PERF`): `perf record -e cpu-clock`
 * samples a process's threads on a timer while they run, kernel and native code
 * (SQLite, V8's garbage collector and compiler threads) included, and needs no
 * hardware counter. `node --cpu-prof` (`BENCH_PROFILE`) samples only the main
 * thread's JavaScript, by the wall clock. The targets run with `--perf-basic-prof`, so
 * JIT frames carry names; those go stale as V8 moves code, so read JavaScript from
 * `--cpu-prof`, and the kernel, native code and threads from here.
 * @module
 */
import { spawn, spawnSync } from 'node:child_process'

/**
 * Node's options for a recorded target: JIT symbols in `/tmp/perf-<pid>.map` for perf.
 * `--perf-basic-prof` also turns V8's log on, which would land in the working
 * directory as `isolate-*.log`; it goes to `logFile` instead.
 */
export function perfNodeOptions(logFile: string): string[] {
  return ['--perf-basic-prof', `--logfile=${logFile}`, '--no-logfile-per-isolate']
}

/** Samples per second and thread on the CPU. */
const FREQUENCY_HZ = 999

/** Inclusive rows kept from `perf report --children`: system calls, SQLite, the garbage collector. */
const INCLUSIVE_ROWS =
  /__x64_sys_|sqlite3VdbeExec|Scavenger::Process|MarkCompactCollector::CollectGarbage|ConcurrentMarking::Run/

/**
 * Starts recording process `pid` (all its threads, call graphs) into `file`.
 * @returns a function that stops the recording and resolves once perf has written `file`.
 * @throws (from the returned function) when perf failed: the message carries its output.
 */
export function perfRecord(pid: number, file: string): () => Promise<void> {
  const child = spawn(
    'perf',
    ['record', '-e', 'cpu-clock', '-F', String(FREQUENCY_HZ), '-g', '-p', String(pid), '-o', file],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  const exited = new Promise<void>((resolve) => {
    child.once('error', (error) => {
      stderr += String(error)
      resolve()
    })
    child.once('exit', () => resolve())
  })
  return async () => {
    child.kill('SIGINT')
    await exited
    // Stopped by SIGINT, perf exits with a signal's status even when it wrote the file.
    if (!stderr.includes('Captured and wrote')) throw new Error(`perf record: ${stderr.trim().slice(-300)}`)
  }
}

/**
 * What a recording shows, as text after `header`: each thread's and binary's share of
 * the samples (`perf report --sort comm,dso`), and the inclusive share of each system
 * call, of SQLite's statement execution and of the garbage collector. A share times
 * the CPU per request in `header` is that part's CPU per request.
 */
export function perfSummary(file: string, header: string): string {
  const report = (...args: string[]) =>
    spawnSync('perf', ['report', '-i', file, '--stdio', '-g', 'none', ...args], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
      timeout: 600_000,
    }).stdout ?? ''
  const rows = (text: string) => text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'))
  const byBinary = rows(report('--no-children', '--sort', 'comm,dso'))
  const inclusive = rows(report('--children', '--sort', 'sym')).filter((line) => INCLUSIVE_ROWS.test(line))
  return [
    header,
    '',
    '## Samples by thread and binary (self)',
    ...byBinary,
    '',
    '## Inclusive (children, self)',
    ...inclusive,
    '',
  ].join('\n')
}
