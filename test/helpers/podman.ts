/**
 * The container image under test, and containers of it, through the real podman CLI.
 *
 * - {@link imageUnderTest}: the image named by `PLANT_STORE_IMAGE`, or the
 *   repository's Dockerfile built once per test process (`podman build
 *   --format=docker`: the OCI format drops `HEALTHCHECK`), tagged
 *   `localhost/plant-store:test`. Options the machine needs for builds (e.g. a
 *   mounted npm configuration) come from `PODMAN_BUILD_OPTIONS`, words separated
 *   by spaces.
 * - {@link runContainer}: `podman run -d` with port 3000 published on 127.0.0.1
 *   only (a free host port, read back), waiting until `GET /health/live` answers
 *   200; the container is removed at teardown.
 * - {@link createVolume}: a named volume, removed at teardown.
 *
 * Every podman failure throws with podman's own message. Without podman the first
 * call throws saying so: the container tests fail rather than skip.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { TestContext } from './app.js'
import { failure, lastLine, run, type RunResult } from './command.js'

/** The repository root: the build context. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** The tag {@link imageUnderTest} builds. */
export const TEST_IMAGE = 'localhost/plant-store:test'

/**
 * Runs `podman ARGS`.
 * @param timeoutMs - at most this long (default 120 s), then the command is killed.
 * @returns its standard output, trimmed.
 * @throws when podman is missing, exits non-zero, or runs out of time; the
 *   message carries podman's standard error.
 */
export async function podman(args: readonly string[], timeoutMs = 120_000): Promise<string> {
  return (await runPodman(args, timeoutMs)).stdout.trim()
}

/** Runs `podman ARGS`; resolves with both output streams. @throws as {@link podman}. */
async function runPodman(args: readonly string[], timeoutMs: number): Promise<RunResult> {
  return run('podman', args, { timeoutMs, install: 'apt-get install podman (the container tests need it)' })
}

let built: Promise<string> | undefined

/**
 * The image to test: `PLANT_STORE_IMAGE` when set (it must exist locally), else the
 * Dockerfile built once per process (cached layers make a rebuild of an unchanged
 * tree take seconds; a cold build takes minutes on 2 cores).
 * @returns the image's name.
 * @throws when podman is missing, the named image does not exist, or the build fails.
 */
export async function imageUnderTest(): Promise<string> {
  built ??= (async () => {
    const named = process.env.PLANT_STORE_IMAGE
    if (named !== undefined && named !== '') {
      await podman(['image', 'exists', named]).catch((error: Error) => {
        throw new Error(`PLANT_STORE_IMAGE=${named} is not a local image`, { cause: error })
      })
      return named
    }
    const options = (process.env.PODMAN_BUILD_OPTIONS ?? '').split(/\s+/).filter((word) => word !== '')
    await podman(['build', '--format=docker', ...options, '--tag', TEST_IMAGE, ROOT], 900_000)
    return TEST_IMAGE
  })()
  return built
}

/** A name no other test run uses: `plant-store-test-<what>-<random>`. */
export function uniqueName(what: string): string {
  return `plant-store-test-${what}-${randomBytes(4).toString('hex')}`
}

/** Creates a named volume, removed (with its data) at teardown. @returns its name. */
export async function createVolume(t: TestContext): Promise<string> {
  const name = uniqueName('data')
  await podman(['volume', 'create', name])
  t.teardown(() => podman(['volume', 'rm', '--force', name]))
  return name
}

/** A container started by {@link runContainer} (or restarted by {@link Container.start}). */
export interface Container {
  readonly name: string
  /** Base URL on the host, e.g. `http://127.0.0.1:41234`: the published port 3000. */
  readonly url: string
  /** Everything the container wrote to stdout and stderr so far (interleaving between the two not kept). */
  logs(): Promise<string>
  /** `podman start` again (after a stop or kill) and wait until it is live. @returns the running container. */
  start(): Promise<Container>
  /** One field of `podman inspect`, as a Go template, e.g. `{{.State.ExitCode}}`. */
  inspect(template: string): Promise<string>
}

/**
 * `podman run -d [options] image [command]` with port 3000 published on 127.0.0.1
 * (a free host port), then waits until `GET /health/live` answers 200. The
 * container is removed (with anonymous volumes) at teardown.
 * @param options - `podman run` options, e.g. `['--read-only', '-v', 'vol:/data']`.
 * @param readyTimeoutMs - how long the service may take to become live (default 30 s).
 * @throws when podman fails, or the container exits or is not live in time (with its logs).
 */
export async function runContainer(t: TestContext, image: string, options: readonly string[] = [], readyTimeoutMs = 30_000): Promise<Container> {
  const name = uniqueName('run')
  t.teardown(() => podman(['rm', '--force', '--volumes', '--time', '0', name]))
  await podman(['run', '--detach', '--name', name, '--publish', '127.0.0.1::3000', ...options, image])
  return live(name, readyTimeoutMs)
}

/** The container `name` once `GET /health/live` answers 200 on its published port. */
async function live(name: string, timeoutMs: number): Promise<Container> {
  const container: Container = {
    name,
    url: `http://${await podman(['port', name, '3000/tcp'])}`,
    logs: async () => {
      // podman logs writes what the container wrote to stderr on its own stderr.
      const { stdout, stderr } = await runPodman(['logs', name], 30_000)
      return stdout + stderr
    },
    start: async () => {
      await podman(['start', name])
      return live(name, timeoutMs)
    },
    inspect: (template) => podman(['inspect', '--format', template, name]),
  }
  await waitUntil(`${name} to answer GET /health/live with 200`, timeoutMs, async () => {
    if ((await container.inspect('{{.State.Running}}')) !== 'true') {
      const logs = await container.logs()
      throw failure(`container ${name} exited (code ${await container.inspect('{{.State.ExitCode}}')}) before it was live: ${lastLine(logs)}`, logs)
    }
    const response = await fetch(`${container.url}/health/live`).catch(() => undefined)
    await response?.body?.cancel()
    return response?.status === 200
  })
  return container
}

/**
 * Polls `probe` (every 50 ms) until it returns true.
 * @throws when `timeoutMs` passes first ("timed out waiting for WHAT"), or the probe throws.
 */
export async function waitUntil(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
