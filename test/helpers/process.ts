/** The service process: `service/server.ts` with the test's loader and coverage hooks, or the built artifact. */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import type { Test } from 'tap'
import { LIMITS_OFF, type TestContext, TOKEN } from './app.ts'
import { waitUntil } from './podman.ts'

/** A service's environment: {@link TOKEN}, `NODE_ENV=test`, a fresh `DATA_DIR`, then `env`. */
export const serviceEnv = (t: Pick<Test, 'testdir'>, env: Record<string, string | undefined> = {}) => ({
  PLANT_STORE_TOKENS: TOKEN,
  DATA_DIR: join(t.testdir(), 'data'),
  NODE_ENV: 'test',
  ...env,
})

/** A running service: `stop` resolves with the exit code; `waitFor` a pattern in its output (120 s at most). */
export interface ServiceProcess {
  readonly child: ChildProcess
  readonly url: string
  output(): string
  stop(signal?: NodeJS.Signals): Promise<number | null>
  waitFor(pattern: RegExp): Promise<RegExpExecArray>
}

/** Spawns the service with `env`, killed at teardown. @returns once it listens. */
export async function startService(t: TestContext, env: Record<string, string | undefined>): Promise<ServiceProcess> {
  const { child, output } = spawnService(env)
  // 'close', not 'exit': once stdout and stderr are drained.
  const exited = once(child, 'close')
  let closed = false
  child.on('close', () => (closed = true))
  t.teardown(() => void (closed || child.kill('SIGKILL')))
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    return ((await exited) as [number | null])[0]
  }
  const waitFor = async (pattern: RegExp) => {
    let match = null as RegExpExecArray | null
    await waitUntil(`${pattern} in the output`, 120_000, async () => {
      match = pattern.exec(output())
      if (match === null && closed) throw new Error(`the process exited (${child.exitCode ?? child.signalCode})`)
      return match !== null
    }).catch((error: Error) => {
      throw new Error(`${error.message}; no ${pattern} in its output:\n${output()}`)
    })
    return match!
  }
  try {
    const [, url] = await waitFor(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
    return { child, url: url!, output, stop, waitFor }
  } catch (error) {
    child.kill('SIGKILL')
    throw new Error(`service did not start: ${(error as Error).message}`, { cause: error })
  }
}

/** The `request completed` log line of `requestId`, parsed, once written. */
export async function completedLogLine(service: ServiceProcess, requestId: string): Promise<Record<string, unknown>> {
  const [line] = await service.waitFor(
    new RegExp(`^\\{.*"requestId":"${requestId}".*"msg":"request completed".*\\}$`, 'm'),
  )
  return JSON.parse(line) as Record<string, unknown>
}

/** Runs the service (as `runAs`, else the test's user) until it exits by itself. */
export async function runToExit(env: Record<string, string | undefined>, runAs?: { uid: number; gid: number }) {
  const { child, output } = spawnService(env, runAs)
  const [code] = (await once(child, 'close')) as [number | null]
  return { code, output: output() }
}

/** `TEST_SERVICE_SCRIPT`: the built artifact (`dist/service/server.js`), run with plain Node. */
const ARTIFACT = process.env.TEST_SERVICE_SCRIPT
export const RUNS_ARTIFACT = ARTIFACT !== undefined

/** The service on a free loopback port, {@link LIMITS_OFF}, `env`; only PATH and tap's settings inherited. */
function spawnService(
  env: Record<string, string | undefined>,
  runAs?: { uid: number; gid: number },
): { child: ChildProcess; output: () => string } {
  const inherited = Object.entries(process.env).filter(([name]) =>
    /^(PATH|NODE_OPTIONS|NODE_V8_COVERAGE|TS_NODE_\w+|_?TAP\w*)$/.test(name),
  )
  const args = ARTIFACT === undefined ? [...process.execArgv, 'service/server.ts'] : [ARTIFACT]
  const base = { ...Object.fromEntries(inherited), NODE_DISABLE_COMPILE_CACHE: '1', HOST: '127.0.0.1', PORT: '0' }
  const child = spawn(process.execPath, args, {
    env: { ...base, ...LIMITS_OFF, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...runAs,
  })
  let output = ''
  for (const stream of [child.stdout!, child.stderr!])
    stream.on('data', (chunk: Buffer) => (output += chunk.toString()))
  return { child, output: () => output }
}
