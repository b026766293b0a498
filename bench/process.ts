/**
 * Server processes of the benchmark: start one (pinned to a core when `taskset`
 * exists), time it to its first answered request, read its peak memory, stop it.
 * Every child is tracked and killed when the benchmark exits, whatever happens.
 *
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'

const children = new Set<ChildProcess>()
/** Kills (SIGKILL) every server process still running. Also runs on exit, whatever the cause. */
export function killAll(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}
process.on('exit', killAll)

/** Where `taskset` is, or `undefined`; pinning needs it and at least two cores. */
export const TASKSET = ['/usr/bin/taskset', '/bin/taskset'].find((path) => existsSync(path))

/**
 * Pins this process (the load generator) to one core.
 * @returns true when pinned.
 */
export function pinSelf(core: number): boolean {
  if (TASKSET === undefined) return false
  execFileSync(TASKSET, ['-cp', String(core), String(process.pid)], { stdio: 'ignore' })
  return true
}

/** A free TCP port on 127.0.0.1 (the service's readiness is probed on it, so it is chosen here). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (typeof address !== 'object' || address === null) throw new Error('no port')
  return address.port
}

/** The answer to one request. */
export interface Answer {
  readonly status: number
  readonly body: string
}

/**
 * Sends one `POST` with a JSON body over a fresh connection (no keep-alive, so a
 * probe never holds the server open).
 * @throws on a socket error or after `timeoutMs` milliseconds.
 */
export function postJson(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs = 2000,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      { method: 'POST', agent: false, headers: { ...headers, connection: 'close' }, timeout: timeoutMs },
      (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (text += chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }))
        response.on('error', reject)
      },
    )
    sent.on('timeout', () => sent.destroy(new Error(`no answer in ${timeoutMs} ms`)))
    sent.on('error', reject)
    sent.end(body)
  })
}

/** How to start one server process. */
export interface StartOptions {
  /** Node arguments before the script, e.g. `--cpu-prof`. */
  readonly nodeArgs?: readonly string[]
  /** A command that runs node, before it (e.g. `valgrind --tool=callgrind …`); it must exec in place, keeping the pid. */
  readonly wrapper?: readonly string[]
  /** The compiled script to run. */
  readonly script: string
  /** Its working directory (default: this process's). */
  readonly cwd?: string
  /** Environment of the child (on top of PATH and HOME only: nothing else leaks in). */
  readonly env: Readonly<Record<string, string>>
  readonly port: number
  /** Core to pin the child to, when pinning is possible. */
  readonly core?: number
  /**
   * Sends one probe request; resolves `undefined` when it was answered as
   * expected, else why not (e.g. `status 503`). Called every 5 ms until it
   * succeeds or `readyTimeoutMs` passes.
   */
  readonly probe: (url: string) => Promise<string | undefined>
  /** Default 30 000 ms. */
  readonly readyTimeoutMs?: number
}

/** A started server process. */
export interface ServerProcess {
  readonly pid: number
  readonly url: string
  /** Milliseconds from spawn to the first probe answered as expected. */
  readonly readyMs: number
  /** Peak resident memory so far (VmHWM), MB; `undefined` once it has exited. */
  peakRssMb(): number | undefined
  /** Current resident memory (VmRSS), MB; `undefined` once it has exited. */
  rssMb(): number | undefined
  /** CPU time used so far by all its threads, seconds; `undefined` once it has exited. */
  cpuTimes(): CpuTimes | undefined
  /** The last few KB the process wrote to stdout and stderr. */
  output(): string
  /** How it ended (`code 1`, `signal SIGKILL`), or `undefined` while it runs. */
  exitStatus(): string | undefined
  /**
   * SIGTERM, then SIGKILL after `graceMs`.
   * @returns milliseconds until it exited, and whether it had to be killed.
   */
  stop(graceMs?: number): Promise<{ readonly ms: number; readonly killed: boolean }>
}

function procStatusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : undefined
  } catch {
    return undefined
  }
}

/** Clock ticks per second of `/proc/<pid>/stat` (`getconf CLK_TCK`; 100 on Linux). */
const CLOCK_TICKS = 100

/** CPU time of a process, seconds (`/proc/<pid>/stat`, all threads). */
export interface CpuTimes {
  /** `utime`: user mode. */
  readonly user: number
  /** `stime`: kernel mode, including the softirq work (e.g. loopback TCP delivery) that ran while it was on the CPU. */
  readonly system: number
}

function procCpuTimes(pid: number): CpuTimes | undefined {
  try {
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ')
    return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS }
  } catch {
    return undefined
  }
}

/**
 * Starts a server process and waits until it answers its probe.
 * @throws when it exits or does not answer within the timeout; it is killed then,
 *   and the message carries the end of its output.
 */
export async function startServer(options: StartOptions): Promise<ServerProcess> {
  const url = `http://127.0.0.1:${options.port}`
  const node = [...(options.wrapper ?? []), process.execPath, ...(options.nodeArgs ?? []), options.script]
  const pinned = TASKSET !== undefined && options.core !== undefined
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    ...options.env,
    PORT: String(options.port),
    HOST: '127.0.0.1',
  }
  const started = performance.now()
  const command = pinned ? [TASKSET!, '-c', String(options.core), ...node] : node
  const child = spawn(command[0]!, command.slice(1), {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  })
  children.add(child)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let tail = ''
  const keep = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-4096)
  }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const pid = child.pid!
  const alive = (): boolean => child.exitCode === null && child.signalCode === null

  const stop = async (graceMs = 10_000) => {
    const from = performance.now()
    let killed = false
    if (alive()) {
      child.kill('SIGTERM')
      const timer = setTimeout(() => {
        killed = true
        child.kill('SIGKILL')
      }, graceMs)
      await exited
      clearTimeout(timer)
    }
    children.delete(child)
    return { ms: performance.now() - from, killed }
  }

  const deadline = started + (options.readyTimeoutMs ?? 30_000)
  let readyMs: number | undefined
  let why: string | undefined = 'no probe yet'
  while (readyMs === undefined) {
    if (!alive()) {
      children.delete(child)
      throw new Error(`exited (code ${child.exitCode}, signal ${child.signalCode}) before answering: ${tail.trim()}`)
    }
    if (performance.now() > deadline) {
      await stop(0)
      throw new Error(`not ready after ${options.readyTimeoutMs ?? 30_000} ms (last probe: ${why}): ${tail.trim()}`)
    }
    why = await options.probe(url).catch((error: Error) => error.message)
    if (why === undefined) readyMs = performance.now() - started
    else await sleep(5)
  }
  return {
    pid,
    url,
    readyMs,
    peakRssMb: () => procStatusMb(pid, 'VmHWM'),
    rssMb: () => procStatusMb(pid, 'VmRSS'),
    cpuTimes: () => procCpuTimes(pid),
    output: () => tail,
    exitStatus: () =>
      alive() ? undefined : child.signalCode === null ? `code ${child.exitCode}` : `signal ${child.signalCode}`,
    stop,
  }
}
