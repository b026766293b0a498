/**
 * Runs the real service process (`service/server.ts`, through the same TypeScript
 * loader and coverage hooks as the test itself) for tests over real sockets. A proxy
 * that cuts the service off from PostgreSQL is `partition-proxy.ts`.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { LIMITS_OFF, type TestContext } from './app.js'

/** A running service process. */
export interface ServiceProcess {
  readonly child: ChildProcess
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
  /**
   * Waits until the output matches, for what the process writes after it listens.
   * @returns the match. @throws when the process exits first, or after
   *   {@link OUTPUT_DEADLINE_MS} (a guard against a hung process, not a speed limit).
   */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>
}

/**
 * How long a wait on the output of a service process may last before it fails.
 * Generous on purpose: a start that takes 2 s on an idle machine takes 20 s or more
 * on a busy one (every module goes through the TypeScript loader), and a test must
 * not depend on an idle machine. tap's own per-file timeout is the outer bound.
 */
export const OUTPUT_DEADLINE_MS = 120000

/**
 * Spawns `service/server.ts` with the given environment (on top of a minimal
 * one: PATH, NODE_OPTIONS for coverage) and waits until it listens.
 *
 * @throws when the process exits before listening, or does not listen within
 *   {@link OUTPUT_DEADLINE_MS}.
 */
export async function startService(t: TestContext, env: Record<string, string | undefined>): Promise<ServiceProcess> {
  const { child, output } = spawnService(env)
  return watchService(t, child, output)
}

/**
 * The {@link ServiceProcess} of a service process a test spawned itself (stdout and
 * stderr piped, gathered by {@link collectOutput}), once it listens; killed at teardown.
 *
 * @throws as {@link startService} does.
 */
export async function watchService(t: TestContext, child: ChildProcess, output: () => string): Promise<ServiceProcess> {
  // 'close', not 'exit': it comes once stdout and stderr are drained, so output() is whole.
  const exited = once(child, 'close')
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    const [code] = (await exited) as [number | null]
    return code
  }
  let closed = false
  child.on('close', () => (closed = true))
  // Checked on every chunk the process writes (after output() has it) and when it exits.
  const waitFor = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(output())
        if (match) finish(() => resolve(match))
        else if (closed) finish(() => reject(new Error(`the process exited (${child.exitCode ?? child.signalCode}); no ${pattern} in its output:\n${output()}`)))
      }
      const timer = setTimeout(() => finish(() => reject(new Error(`no ${pattern} in the output within ${OUTPUT_DEADLINE_MS} ms:\n${output()}`))), OUTPUT_DEADLINE_MS)
      const finish = (settle: () => void) => {
        clearTimeout(timer)
        child.stdout!.off('data', check)
        child.stderr!.off('data', check)
        child.off('close', check)
        settle()
      }
      child.stdout!.on('data', check)
      child.stderr!.on('data', check)
      child.on('close', check)
      check()
    })
  try {
    const [, url] = await waitFor(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
    return { child, url: url!, output, stop, waitFor }
  } catch (error) {
    child.kill('SIGKILL')
    throw new Error(`service did not start: ${(error as Error).message}`, { cause: error })
  }
}

/**
 * The `request completed` log line of the request with this `X-Request-Id`, parsed;
 * waits for it (see {@link ServiceProcess.waitFor}).
 */
export async function completedLogLine(service: ServiceProcess, requestId: string): Promise<Record<string, unknown>> {
  const [line] = await service.waitFor(new RegExp(`^\\{.*"requestId":"${requestId}".*"msg":"request completed".*\\}$`, 'm'))
  return JSON.parse(line) as Record<string, unknown>
}

/** Who a service process runs as: a user and group id other than the test's (e.g. 65534, nobody). */
export interface RunAs {
  readonly uid: number
  readonly gid: number
}

/**
 * Runs the service until it exits by itself (a start that must fail).
 * @param runAs - user and group to run it as; the test's own when omitted.
 * @returns its exit code and its output.
 */
export async function runToExit(env: Record<string, string>, runAs?: RunAs): Promise<{ code: number | null; output: string }> {
  const { child, output } = spawnService(env, runAs)
  const [code] = (await once(child, 'close')) as [number | null]
  return { code, output: output() }
}

/**
 * What a service process inherits from the test process: PATH, and the settings of
 * tap's TypeScript loader and coverage (so it transpiles without type checking and
 * reports coverage like the test). Nothing else: no configuration leaks in.
 */
function inherited(): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => /^(PATH|NODE_OPTIONS|NODE_V8_COVERAGE|TS_NODE_\w+|_?TAP\w*)$/.test(name)))
}

/**
 * The built artifact to run instead of `service/server.ts` (`TEST_SERVICE_SCRIPT`,
 * e.g. `dist/service/server.js` after `npm run build`), with plain Node: the
 * process tests then test what the image and `npm start` run.
 */
const ARTIFACT = process.env.TEST_SERVICE_SCRIPT

/** Whether service processes run {@link ARTIFACT} under plain Node, without tap's loader hooks. */
export const RUNS_ARTIFACT = ARTIFACT !== undefined

/**
 * Spawns `service/server.ts` (or {@link ARTIFACT}) with the given environment on
 * top of the inherited one, on loopback, a free port and {@link LIMITS_OFF} (a test
 * of a limit sets it). Node's compile cache is off unless `env` unsets
 * `NODE_DISABLE_COMPILE_CACHE`: code loaded from the cache reports no coverage.
 */
function spawnService(env: Record<string, string | undefined>, runAs?: RunAs): { child: ChildProcess; output: () => string } {
  const command = ARTIFACT === undefined ? [...process.execArgv, 'service/server.ts'] : [ARTIFACT]
  const child = spawn(process.execPath, command, {
    // (spawn leaves out the variables whose value is undefined.)
    env: { ...inherited(), NODE_DISABLE_COMPILE_CACHE: '1', HOST: '127.0.0.1', PORT: '0', ...LIMITS_OFF, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...runAs,
  })
  return { child, output: collectOutput(child) }
}

/** Gathers what a child writes to its piped stdout and stderr; call it right after spawning. */
export function collectOutput(child: ChildProcess): () => string {
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  return () => output
}
