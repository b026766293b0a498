/**
 * Runs a command to its exit, for tests: `podman …`, `openssl …`, `nginx -t`,
 * `mount …`. Long-running processes a test starts and stops itself (the service,
 * nginx, etcd, Patroni) are spawned by their own helpers instead.
 *
 * @module
 */
import { execFile } from 'node:child_process'

/** Where and how long a command runs. */
export interface RunOptions {
  /** The working directory; the test's own unless given. */
  readonly cwd?: string
  /** At most this long (default 120 s), then the command is killed and {@link run} throws. */
  readonly timeoutMs?: number
  /** How to install the command, named when it is not found (e.g. `apt-get install podman`). */
  readonly install?: string
}

/** What a command wrote. */
export interface RunResult {
  readonly stdout: string
  readonly stderr: string
}

/**
 * A command that failed: its message is one line (test reporters show only that),
 * ending with the line of its output that says most ({@link lastLine}); the last 40
 * lines of its output are in `output` (tap prints it below the message).
 */
export class CommandError extends Error {
  override readonly name = 'CommandError'
  /** The exit code, or null when the command was killed (timeout) or not started. */
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
  /** The last 40 lines of standard output, then standard error. */
  readonly output: string

  constructor(message: string, result: RunResult & { exitCode: number | null }) {
    super(message)
    this.exitCode = result.exitCode
    this.stdout = result.stdout
    this.stderr = result.stderr
    this.output = tail(`${result.stdout.trimEnd()}\n${result.stderr}`.trim())
  }
}

/**
 * Runs `command ARGS` to its exit.
 * @returns what it wrote to standard output and standard error.
 * @throws {@link CommandError} when the command is not found, exits non-zero, or
 *   outlasts the timeout; the message names the command and carries the last line
 *   of standard error (else output) that names an error.
 */
export async function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const { cwd, timeoutMs = 120_000, install } = options
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error === null) return resolve({ stdout, stderr })
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        const message = `${command} is not installed (not found on PATH)${install === undefined ? '' : `: e.g. ${install}`}`
        return reject(new CommandError(message, { stdout, stderr, exitCode: null }))
      }
      const exitCode = typeof error.code === 'number' ? error.code : null
      const status = error.killed && error.signal !== null ? `killed by ${error.signal} after ${timeoutMs} ms` : (error.signal ?? `exit ${String(error.code)}`)
      reject(new CommandError(`${command} ${args.join(' ')} failed (${status}): ${lastLine(stderr || stdout)}`, { stdout, stderr, exitCode }))
    })
  })
}

/**
 * An error whose message is one line, with the last 40 lines of `output` in its
 * `output` property, as {@link CommandError} has them: for failures found by
 * looking at a command's output rather than its exit.
 */
export function failure(message: string, output: string): Error & { output: string } {
  return Object.assign(new Error(message), { output: tail(output) })
}

/** The line of a command's output that says most: the last one naming an error, else the last one. */
export function lastLine(output: string): string {
  const lines = output.trimEnd().split('\n')
  return lines.findLast((line) => /error/i.test(line))?.trim() ?? lines.at(-1) ?? ''
}

/** The last 40 lines of `output`. */
function tail(output: string): string {
  return output.trimEnd().split('\n').slice(-40).join('\n')
}
