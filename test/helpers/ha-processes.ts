/**
 * Processes of the failover tests: spawned with their output kept, killed with
 * `-9`, and PostgreSQL's processes found from its data directory (a postmaster
 * started by Patroni is not Patroni's child); the operator's commands (`psql`,
 * `patronictl`) run to their exit with the environment the docs give them.
 *
 * @module
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

/** A spawned process whose output is kept (the tail). */
export interface Running {
  child: ChildProcess
  exited: Promise<unknown>
  output: () => string
}

/**
 * Spawns `command`, a long-running process (a server of the cluster), and returns at
 * once; its output is kept. Stopping it is the caller's (one teardown, in order).
 * A command run to its exit is `command.ts`'s `run`.
 */
export function startProcess(command: string, args: string[], env: Record<string, string>, cwd: string): Running {
  const child = spawn(command, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C.UTF-8', ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-65536))
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  // 'close' also comes when the command could not be started (after 'error', which once() would reject on).
  const exited = new Promise((resolve) => child.on('close', resolve))
  child.on('error', (error) => keep(Buffer.from(`${command}: ${error.message}\n`)))
  return { child, exited, output: () => output }
}

/**
 * Runs `command` to its exit with `env` (and PATH) as its whole environment, as an
 * operator's shell runs it with what the docs export: `PGPASSWORD` for `psql`, the
 * `PATRONI_*` overrides for `patronictl`. (`command.ts`'s `run` passes this
 * process's environment.)
 * @returns its standard output.
 * @throws when it exits non-zero or outlasts `timeoutMs`, with what it wrote.
 */
export async function runWith(command: string, args: readonly string[], env: Record<string, string>, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C.UTF-8', ...env }, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout)
      // Not error.message: it repeats the arguments, which may hold a password.
      else reject(new Error(`${command} ${args[0] ?? ''}… failed (${error.killed ? `killed after ${timeoutMs} ms` : `exit ${String(error.code)}`}):\n${stdout}${stderr}`.trimEnd()))
    })
  })
}

/** Kills `running` (-9) unless it has exited, and waits for it. */
export async function stop(running: Running | undefined): Promise<void> {
  if (running === undefined) return
  if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL')
  await running.exited
}

/** Whether process `pid` is gone (a zombie counts as gone: nothing may reap it here). */
export function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').startsWith('Z')
  } catch {
    return true
  }
}

/** The postmaster of `dataDir` (from `postmaster.pid`) and its children, while it runs. */
export function postgresProcesses(dataDir: string): number[] {
  const pidFile = join(dataDir, 'postmaster.pid')
  if (!existsSync(pidFile)) return []
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0])
  if (!(postmaster > 0) || gone(postmaster)) return []
  const children = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]) === postmaster
      } catch {
        return false
      }
    })
    .map(Number)
  return [postmaster, ...children]
}
