/**
 * Server processes: started (pinned with `taskset`), timed to their first answer, read in `/proc`, stopped; all
 * killed when the benchmark exits.
 *
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

const children = new Set<ChildProcess>()
/** Kills every server still running. */
export function killAll(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}
process.on('exit', killAll)

/** The servers' listening address, also their `HOST`. */
export const SERVER_HOST = '127.0.0.1'

export const TASKSET = ['/usr/bin/taskset', '/bin/taskset'].find((path) => existsSync(path))

/** Pins this process to `core`. @returns true when pinned. */
export function pinSelf(core: number): boolean {
  if (TASKSET === undefined) return false
  execFileSync(TASKSET, ['-cp', String(core), String(process.pid)], { stdio: 'ignore' })
  return true
}

/** A free TCP port on {@link SERVER_HOST}. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, SERVER_HOST, resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** One `POST` on a connection of its own, closed after the answer. @throws on an error or after 2 s. */
export function postJson(url: string, headers: Record<string, string>, body: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const options = { method: 'POST', agent: false, headers: { ...headers, connection: 'close' }, timeout: 2000 }
    const sent = request(url, options, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }))
    })
    sent.on('timeout', () => sent.destroy(new Error('no answer in 2 s')))
    sent.on('error', reject)
    sent.end(body)
  })
}

/** CPU time of a process (all threads), seconds. */
export interface CpuTimes {
  user: number
  system: number
}

/** A started server process. */
export interface ServerProcess {
  pid: number
  url: string
  /** Spawn to the first probe answered as expected, ms. */
  readyMs: number
  /** VmHWM, MB. */
  peakRssMb(): number | undefined
  cpuTimes(): CpuTimes | undefined
  /** How it ended, with its output's end; `undefined` while it runs. */
  exitStatus(): string | undefined
  /** SIGTERM, then SIGKILL after 10 s. */
  stop(): Promise<void>
}

function proc(pid: number, file: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * Starts `<wrapper> node <nodeArgs> <script>` with `env`, PORT and HOST, and probes it every 5 ms until `probe`
 * resolves `undefined` (else why not). @throws when it exits or is not ready in `readyWithinS` (default 30).
 */
export async function startServer(options: {
  script: string
  nodeArgs: readonly string[]
  cwd: string
  env: Readonly<Record<string, string>>
  core: number | undefined
  probe: (url: string) => Promise<string | undefined>
  /** A command that runs node, such as valgrind's. */
  wrapper?: readonly string[]
  readyWithinS?: number
}): Promise<ServerProcess> {
  const port = await freePort()
  const url = `http://${SERVER_HOST}:${port}`
  const pin = TASKSET === undefined || options.core === undefined ? [] : [TASKSET, '-c', String(options.core)]
  const command = [...pin, ...(options.wrapper ?? []), process.execPath, ...options.nodeArgs, options.script]
  const readyWithinS = options.readyWithinS ?? 30
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...options.env }
  const started = performance.now()
  const child = spawn(command[0]!, command.slice(1), {
    env: { ...env, PORT: String(port), HOST: SERVER_HOST },
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  let tail = ''
  const keep = (chunk: Buffer) => void (tail = (tail + chunk.toString()).slice(-2048))
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const alive = () => child.exitCode === null && child.signalCode === null
  const stop = async () => {
    if (alive()) {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    }
    children.delete(child)
  }
  const output = () => tail.trim().replace(/\s+/g, ' ').slice(-300)
  let why: string | undefined = 'no probe yet'
  while (why !== undefined) {
    if (!alive()) throw new Error(`exited (code ${child.exitCode}, signal ${child.signalCode}): ${output()}`)
    if (performance.now() - started > readyWithinS * 1000) {
      await stop()
      throw new Error(`not ready after ${readyWithinS} s (last probe: ${why}): ${output()}`)
    }
    why = await options.probe(url).catch((error: Error) => error.message)
    if (why !== undefined) await sleep(5)
  }
  const readyMs = performance.now() - started
  const pid = child.pid!
  return {
    pid,
    url,
    readyMs,
    peakRssMb: () => {
      const kb = /^VmHWM:\s+(\d+) kB/m.exec(proc(pid, 'status') ?? '')?.[1]
      return kb === undefined ? undefined : Number(kb) / 1024
    },
    cpuTimes: () => {
      // After the command name (which may hold spaces): utime and stime are fields 14 and 15, in ticks of 1/100 s.
      const fields = proc(pid, 'stat')
        ?.replace(/^.*\) /s, '')
        .split(' ')
      return fields === undefined ? undefined : { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }
    },
    exitStatus: () => (alive() ? undefined : `code ${child.exitCode ?? child.signalCode}: ${output()}`),
    stop,
  }
}
