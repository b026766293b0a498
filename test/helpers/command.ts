/** Runs a command to its exit (`podman …`, `openssl …`, `mount …`). */
import { execFile } from 'node:child_process'

/** What a command wrote. */
export interface RunResult {
  readonly stdout: string
  readonly stderr: string
}

/** A failed command: a one-line message ending with {@link lastLine}; the last 40 lines of output. */
export class CommandError extends Error {
  override readonly name = 'CommandError'
  /** null when killed (timeout) or not started. */
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
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
 * Runs `command ARGS` in `cwd`, with `env` added to this process's environment, killed after `timeoutMs`.
 * @throws {@link CommandError} when missing or failing.
 */
export async function run(
  command: string,
  args: readonly string[],
  {
    cwd,
    env,
    timeoutMs = 120_000,
    install,
  }: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; install?: string } = {},
): Promise<RunResult> {
  const options = { cwd, env: env && { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }
  return new Promise((resolve, reject) => {
    execFile(command, args, options, (error, stdout, stderr) => {
      if (error === null) return resolve({ stdout, stderr })
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        const message = `${command} is not installed (not found on PATH)${install === undefined ? '' : `: e.g. ${install}`}`
        return reject(new CommandError(message, { stdout, stderr, exitCode: null }))
      }
      const status =
        error.killed && error.signal !== null
          ? `killed by ${error.signal} after ${timeoutMs} ms`
          : (error.signal ?? `exit ${String(error.code)}`)
      const message = `${command} ${args.join(' ')} failed (${status}): ${lastLine(stderr || stdout)}`
      reject(
        new CommandError(message, { stdout, stderr, exitCode: typeof error.code === 'number' ? error.code : null }),
      )
    })
  })
}

/** The line of a command's output that says most: the last one naming an error, else the last one. */
export function lastLine(output: string) {
  const lines = output.trimEnd().split('\n')
  return lines.findLast((line) => /error/i.test(line))?.trim() ?? lines.at(-1) ?? ''
}

const tail = (output: string) => output.trimEnd().split('\n').slice(-40).join('\n')
