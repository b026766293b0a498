/**
 * The container image as an operator runs it, under real podman: the Dockerfile
 * built (or `PLANT_STORE_IMAGE`), started as its non-root user on a read-only root
 * file system without capabilities, tokens from a read-only secret file, data on a
 * named volume, the port published on 127.0.0.1 only. Checks what only the real
 * container shows: the production dependencies suffice, the data volume keeps
 * plants across containers, the HEALTHCHECK, `podman stop` and `podman kill`, and
 * what the image carries.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { TestContext } from '../helpers/app.js'
import { type Container, createVolume, imageUnderTest, podman, runContainer, waitUntil } from '../helpers/podman.js'
import { jsonText, postPlant } from '../helpers/post-plant.js'
import { hardened } from '../helpers/replicas.js'

// A cold build of the image takes minutes on 2 cores; the checks themselves under one.
t.setTimeout(20 * 60_000)

let image = ''
// Before any check: without podman, or when the build fails, every check fails with that reason.
t.before(async () => {
  image = await imageUnderTest()
})

// A token of the RFC 6750 §2.1 alphabet, known only to this run, in a secret file
// readable by the image's user (uid 1000) and mounted read-only.
const token = randomBytes(24).toString('base64url')
const secrets = mkdtempSync(join(tmpdir(), 'plant-store-secrets-'))
t.teardown(() => rmSync(secrets, { recursive: true, force: true }))
const tokensFile = join(secrets, 'plant_store_tokens')
writeFileSync(tokensFile, `${token}\n`, { mode: 0o444 })
/** Headers of a create with the run's token. */
const AUTHORIZED = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }

/** {@link hardened} options, `/data` on `volume`, and `env` on top. */
function hardenedOn(volume: string, env: Record<string, string> = {}): string[] {
  return [...hardened(tokensFile), '--volume', `${volume}:/data`, ...Object.entries(env).flatMap(([name, value]) => ['--env', `${name}=${value}`])]
}

/** Starts the image hardened on a fresh volume (or `volume`). */
async function start(t: TestContext, volume?: string, env?: Record<string, string>): Promise<Container> {
  return runContainer(t, image, hardenedOn(volume ?? (await createVolume(t)), env))
}

/** A NewPlant of these tests (an id beyond 2^53 is sent exactly). */
function plant(id: bigint | number, name: string): { id: bigint | number; name: string; tag: string } {
  return { id, name, tag: 'container' }
}

/** Runs `work` on every item with at most `concurrency` at a time. */
async function inParallel<T, R>(items: readonly T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index]!)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return results
}

t.test('runs as uid 1000 with a read-only root, no capabilities, no privilege gain; POST /plants is 401 without the token, 200 with it', async (t) => {
  const container = await start(t)
  t.equal(await podman(['exec', container.name, 'id', '-u']), '1000', 'the service runs as the node user')
  const command = JSON.parse(await podman(['image', 'inspect', '--format', '{{json .Config.Cmd}}', image])) as string[]
  t.same([command[0], command.at(-1)], ['node', 'dist/service/server.js'], "the image's command: node, its options, the service")
  t.equal((await podman(['exec', container.name, 'cat', '/proc/1/cmdline'])).split('\0').join(' ').trim(), command.join(' '), 'node itself is PID 1 (receives the stop signal)')
  const status = await podman(['exec', container.name, 'cat', '/proc/1/status'])
  t.match(status, /^CapEff:\s+0+$/m, 'no effective capabilities')
  t.match(status, /^NoNewPrivs:\s+1$/m, 'no privilege gain')
  await t.rejects(podman(['exec', container.name, 'touch', '/app/probe']), /Read-only file system/, 'the application files cannot be changed')

  const unauthorized = await postPlant(container.url, plant(1, 'Monstera'), { headers: { 'content-type': 'application/json' } })
  t.equal(unauthorized.statusCode, 401, 'no token: 401')
  const created = await postPlant(container.url, plant(1, 'Monstera'), { headers: AUTHORIZED })
  t.equal(created.statusCode, 200, `the token from the secret file: 200 ${created.body}`)
  t.notMatch(await container.logs(), token, 'the token is never logged')
})

t.test('the data volume keeps every plant when the container is removed and created again', async (t) => {
  const volume = await createVolume(t)
  const first = await start(t, volume)
  // ids above 2^53 too, written exactly into the JSON text
  const bodies = Array.from({ length: 20 }, (_, i) => plant(2n ** 53n + BigInt(i), `plant ${i}`))
  const created = await Promise.all(bodies.map((body) => postPlant(first.url, body, { headers: AUTHORIZED })))
  t.same(created.map((response) => response.statusCode), bodies.map(() => 200))
  await podman(['rm', '--force', first.name])

  const second = await start(t, volume)
  const replays = await Promise.all(bodies.map((body) => postPlant(second.url, body, { headers: AUTHORIZED })))
  t.same(replays.map((response) => response.statusCode), bodies.map(() => 200), 'a replay of each plant: 200')
  t.same(replays.map((response) => response.body), created.map((response) => response.body), 'with the same body')
  const conflicts = await Promise.all(bodies.map((body) => postPlant(second.url, { ...body, name: body.name.replace('plant', 'other') }, { headers: AUTHORIZED })))
  t.same(conflicts.map((response) => response.statusCode), bodies.map(() => 409), 'different content for the same id: 409')
})

t.test('a /data the service cannot write stops the start with a message naming DATA_DIR and the reason: read-only, or owned by another user', async (t) => {
  /** Runs the image attached until it exits; resolves with podman's failure and the container's output. */
  const refusedStart = async (data: string): Promise<string> => {
    const error = (await podman(['run', '--rm', '--no-healthcheck', ...hardened(tokensFile), '--volume', data, image]).then(
      () => t.fail('the container started'),
      (failure: unknown) => failure,
    )) as Error & { output?: string }
    return `${error.message}\n${error.output ?? ''}`
  }
  const volume = await createVolume(t)
  t.match(await refusedStart(`${volume}:/data:ro`), /exit 1\b[\s\S]*plant-store: .*DATA_DIR \(\/data\).*(EROFS|read-only)/i, 'a read-only volume')
  const rootOwned = mkdtempSync(join(tmpdir(), 'plant-store-root-owned-'))
  t.teardown(() => rmSync(rootOwned, { recursive: true, force: true }))
  chmodSync(rootOwned, 0o755)
  t.match(await refusedStart(`${rootOwned}:/data`), /exit 1\b[\s\S]*plant-store: .*DATA_DIR \(\/data\).*(EACCES|permission denied)/i, 'a directory owned by root, not by the node user')
})

t.test("the image's HEALTHCHECK (exec form) reports healthy, and unhealthy when the service does not answer", async (t) => {
  const test = JSON.parse(await podman(['image', 'inspect', '--format', '{{json .Config.Healthcheck.Test}}', image])) as string[]
  t.same(test, ['CMD', 'node', 'dist/scripts/healthcheck.js'], 'exec form: no shell in the image is needed to run it')
  const container = await start(t)
  await podman(['healthcheck', 'run', container.name])
  t.equal(await container.inspect('{{.State.Health.Status}}'), 'healthy')

  await podman(['kill', '--signal', 'STOP', container.name])
  await t.rejects(podman(['healthcheck', 'run', container.name]), /unhealthy/, 'a stopped process fails the probe')
  await podman(['kill', '--signal', 'CONT', container.name])
  await podman(['healthcheck', 'run', container.name])
})

t.test('podman stop lets an in-flight request finish with 200, then the container exits 0 within the stop timeout', async (t) => {
  const volume = await createVolume(t)
  const container = await start(t, volume)
  const stopTimeoutMs = Number(await container.inspect('{{.Config.StopTimeout}}')) * 1000
  const env = await container.inspect('{{range .Config.Env}}{{println .}}{{end}}')
  const graceMs = Number(/^SHUTDOWN_GRACE_MS=(\d+)$/m.exec(env)?.[1])
  t.ok(graceMs < stopTimeoutMs, `SHUTDOWN_GRACE_MS (${graceMs}) is below the stop timeout (${stopTimeoutMs} ms): the service exits before SIGKILL`)

  // Headers with Expect: 100-continue, so "100 Continue" proves the request reached
  // the service; half the body; stop; the rest of the body once the service has
  // logged that it is shutting down.
  const body = Buffer.from(jsonText(plant(42, 'in flight')))
  const half = Math.floor(body.length / 2)
  const client = request(`${container.url}/plants`, {
    method: 'POST',
    headers: { ...AUTHORIZED, 'content-length': body.length, expect: '100-continue' },
  })
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    client.on('error', reject)
    client.on('response', (incoming) => {
      let text = ''
      incoming.setEncoding('utf8')
      incoming.on('data', (chunk: string) => (text += chunk))
      incoming.on('end', () => resolve({ status: incoming.statusCode!, body: text }))
    })
  })
  client.flushHeaders()
  await new Promise((resolve) => client.once('continue', resolve))
  client.write(body.subarray(0, half))

  const started = Date.now()
  const stopped = podman(['stop', container.name])
  await waitUntil('the service to log that it is shutting down', 10_000, async () => /"msg":"shutting down"/.test(await container.logs()))
  t.not(await container.inspect('{{.State.Status}}'), 'exited', 'not exited while the request is in flight')
  client.end(body.subarray(half))
  const answer = await response
  t.equal(answer.status, 200, `the in-flight request is answered 200 ${answer.body}`)
  await stopped
  const elapsed = Date.now() - started
  t.equal(await container.inspect('{{.State.ExitCode}}'), '0', 'the service exits 0 by itself')
  t.ok(elapsed < stopTimeoutMs, `stopped in ${elapsed} ms, before the stop timeout`)

  const restarted = await container.start()
  const replay = await postPlant(restarted.url, plant(42, 'in flight'), { headers: AUTHORIZED })
  t.same({ status: replay.statusCode, body: replay.body }, answer, 'the plant answered during the stop is stored')
})

t.test('podman kill -s KILL under load loses no plant that was answered 200', async (t) => {
  // Rate limiting is not under test here; the load must not be answered 429.
  const container = await start(t, undefined, { RATE_LIMIT_MAX: '0' })
  const answered = new Map<number, string>()
  let next = 1
  let killed = false
  let failed = 0
  const client = async (): Promise<void> => {
    while (!killed) {
      const id = next++
      try {
        const response = await postPlant(container.url, plant(id, `load ${id}`), { headers: AUTHORIZED })
        if (response.statusCode === 200) answered.set(id, response.body)
      } catch {
        failed++ // the connection died with the container: the fate of this plant is unknown
      }
    }
  }
  const load = Promise.all(Array.from({ length: 16 }, client))
  const loadStarted = Date.now()
  // A few seconds of load, at least 100 plants in.
  await waitUntil('100 plants answered 200', 30_000, async () => answered.size >= 100)
  await waitUntil('3 s of load', 10_000, async () => Date.now() - loadStarted >= 3000)
  await podman(['kill', '--signal', 'KILL', container.name])
  killed = true
  await load
  t.equal(await container.inspect('{{.State.ExitCode}}'), '137', 'killed (128 + SIGKILL)')
  t.comment(`${answered.size} plants answered 200 before SIGKILL, ${failed} requests cut off by it`)

  const restarted = await container.start()
  const ids = [...answered.keys()]
  const replays = await inParallel(ids, 16, async (id) => {
    const { statusCode, body } = await postPlant(restarted.url, plant(id, `load ${id}`), { headers: AUTHORIZED })
    return { id, status: statusCode, body }
  })
  const lost = replays.filter((replay) => replay.status !== 200 || replay.body !== answered.get(replay.id))
  t.same({ lost: lost.length, first: lost.slice(0, 5) }, { lost: 0, first: [] }, `every one of the ${ids.length} plants answered 200 is still there (replay: 200, same body)`)
})

/**
 * Walks the image's file system (as root, no network) with the image's own node and
 * reports what must not be there. Read by a script, not a shell: the checks do not
 * depend on the tools the image carries.
 */
const inspectFileSystem = String.raw`
const fs = require('fs'), path = require('path')
const found = { compilers: [], npmCaches: [], testCode: [], npmrcs: [], app: fs.readdirSync('/app').sort(), dist: fs.readdirSync('/app/dist').sort(), usrLocalEtc: fs.readdirSync('/usr/local/etc') }
const tools = new Set(['cc', 'gcc', 'c++', 'g++', 'cpp', 'clang', 'make', 'python', 'python3'])
for (const dir of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) if (tools.has(name) || /^(gcc|g\+\+|cc|python3)[-.\d]/.test(name)) found.compilers.push(path.join(dir, name))
}
if (fs.existsSync('/usr/lib/gcc')) found.compilers.push('/usr/lib/gcc')
const walk = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    if (['/proc', '/sys', '/dev'].includes(file)) continue
    if (entry.name === '.npm' || entry.name === '_cacache') found.npmCaches.push(file)
    if (entry.name === '.npmrc' || entry.name === 'npmrc') found.npmrcs.push(file)
    if (file.startsWith('/app/') && !file.startsWith('/app/node_modules/') && (/^(test|tests|bench)$/.test(entry.name) || /\.test\.[cm]?[jt]s$/.test(entry.name))) found.testCode.push(file)
    if (entry.isDirectory()) walk(file)
  }
}
walk('/')
process.stdout.write(JSON.stringify(found))
`

t.test('the image carries no compiler, no npm cache, no test or benchmark code, no secrets', async (t) => {
  const found = JSON.parse(await podman(['run', '--rm', '--network=none', '--user=0', '--entrypoint=node', image, '-e', inspectFileSystem])) as Record<string, string[]>
  t.same(found.compilers, [], 'no compiler or build tool (cc, gcc, g++, make, python3)')
  t.same(found.npmCaches, [], 'no npm cache')
  t.same(found.testCode, [], 'no test or benchmark code')
  t.same(found.app, ['dist', 'node_modules', 'package.json'], '/app: the build output, production dependencies, package.json')
  t.same(found.dist, ['openapi.yaml', 'scripts', 'service'], '/app/dist: the service, its scripts and the contract (no bench/, no test/)')
  t.same(found.npmrcs, [], 'no npm configuration (a build-time npmrc or CA file stays out)')
  t.same(found.usrLocalEtc, [], 'nothing left of a configuration mounted during the build')

  const config = JSON.parse(await podman(['image', 'inspect', '--format', '{{json .Config}}', image])) as { Env: string[]; User: string }
  t.equal(config.User, 'node', 'runs as node by default')
  t.same(config.Env.filter((variable) => /TOKEN|DATABASE_URL|PASSWORD|SECRET|npm_config/i.test(variable)), [], 'no secret in the environment')
  const history = await podman(['history', '--no-trunc', '--format', '{{.CreatedBy}}', image])
  t.notMatch(history, /cafile|npmrc|TOKENS=|Bearer /i, 'no secret or npm configuration in the build history')
  const size = Number(await podman(['image', 'inspect', '--format', '{{.Size}}', image]))
  t.comment(`image ${image}: ${(size / 1e6).toFixed(1)} MB`)
})
