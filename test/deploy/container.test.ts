/**
 * The image under podman, hardened: the user and PID 1, `podman stop`, `kill -9` under load, the HEALTHCHECK, the
 * image's contents.
 */
import { once } from 'node:events'
import { type IncomingMessage, request } from 'node:http'
import t from 'tap'
import type { TestContext } from '../helpers/app.ts'
import {
  createVolume,
  envOptions,
  hardened,
  imageUnderTest,
  podman,
  randomToken,
  runContainer,
  tokensFile,
  waitUntil,
} from '../helpers/podman.ts'
import { jsonText, postPlant } from '../helpers/post-plant.ts'

t.setTimeout(20 * 60_000)

const image = await imageUnderTest()
const token = randomToken()
const secret = tokensFile(t, token)
const AUTHORIZED = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }

/** The image hardened, `/data` on `volume` (else a fresh one), with `env`. */
async function start(t: TestContext, volume?: string, env: Record<string, string> = {}) {
  return runContainer(t, image, [
    ...hardened(secret),
    '--volume',
    `${volume ?? (await createVolume(t))}:/data`,
    ...envOptions(env),
  ])
}
const imageConfig = async (field = '') =>
  JSON.parse(await podman(['image', 'inspect', '--format', `{{json .Config${field}}}`, image]))
const create = (url: string, id: number, name = `plant ${id}`) =>
  postPlant(url, { id, name, tag: 'container' }, { headers: AUTHORIZED })

// What the hardening options do: compose.test.ts.
t.test(
  'runs as uid 1000, node as PID 1, on a read-only root; POST /plants is 401 without the token, 200 with it',
  async (t) => {
    const container = await start(t)
    const exec = (...command: string[]) => podman(['exec', container.name, ...command])
    t.equal(await exec('id', '-u'), '1000', 'the service runs as the node user')
    const command = (await imageConfig('.Cmd')) as string[]
    t.same([command[0], command.at(-1)], ['node', 'dist/service/server.js'], "the image's command: node, the service")
    const pid1 = (await exec('cat', '/proc/1/cmdline')).split('\0').join(' ').trim()
    t.equal(pid1, command.join(' '), 'node itself is PID 1 (receives the stop signal)')
    await t.rejects(exec('touch', '/app/probe'), /Read-only file system/, 'the application files cannot be changed')
    const unauthorized = await postPlant(
      container.url,
      { id: 1, name: 'Monstera' },
      { headers: { 'content-type': 'application/json' } },
    )
    t.equal(unauthorized.statusCode, 401, 'no token: 401')
    t.equal((await create(container.url, 1)).statusCode, 200, 'the token from the secret file: 200')
    t.notMatch(await container.logs(), token, 'the token is never logged')
  },
)

// Another user's data directory: test/services/file-systems.test.ts.
t.test('a read-only /data stops the start with a message naming DATA_DIR and the reason', async (t) => {
  // Attached: podman run fails with the container's exit code and output.
  const volume = ['--volume', `${await createVolume(t)}:/data:ro`]
  const output = await podman(['run', '--rm', '--no-healthcheck', ...hardened(secret), ...volume, image]).catch(
    (error: Error & { output?: string }) => `${error.message}\n${error.output ?? ''}`,
  )
  t.match(output, /exit 1\b[\s\S]*plant-store: .*DATA_DIR \(\/data\).*(EROFS|read-only)/i)
})

t.test(
  "the image's HEALTHCHECK (exec form) reports healthy, and unhealthy when the service does not answer",
  async (t) => {
    t.same(
      await imageConfig('.Healthcheck.Test'),
      ['CMD', 'node', 'dist/scripts/healthcheck.js'],
      'exec form: needs no shell',
    )
    const container = await start(t)
    await podman(['healthcheck', 'run', container.name])
    t.equal(await container.inspect('{{.State.Health.Status}}'), 'healthy')
    await podman(['kill', '--signal', 'STOP', container.name])
    await t.rejects(podman(['healthcheck', 'run', container.name]), /unhealthy/, 'a stopped process fails the probe')
    await podman(['kill', '--signal', 'CONT', container.name])
  },
)

t.test(
  'podman stop lets an in-flight request finish with 200, then the container exits 0 within the stop timeout',
  async (t) => {
    const volume = await createVolume(t)
    const container = await start(t, volume)
    const stopTimeoutMs = Number(await container.inspect('{{.Config.StopTimeout}}')) * 1000
    const graceMs = Number(
      /^SHUTDOWN_GRACE_MS=(\d+)$/m.exec(await container.inspect('{{range .Config.Env}}{{println .}}{{end}}'))?.[1],
    )
    t.ok(graceMs < stopTimeoutMs, `SHUTDOWN_GRACE_MS (${graceMs}) is below the stop timeout (${stopTimeoutMs} ms)`)

    // 100 Continue: the request reached the service; half the body, stop, the rest once it is shutting down.
    const body = Buffer.from(jsonText({ id: 42, name: 'in flight', tag: 'container' }))
    const client = request(`${container.url}/plants`, {
      method: 'POST',
      headers: { ...AUTHORIZED, 'content-length': body.length, expect: '100-continue' },
    })
    const response = once(client, 'response') as Promise<[IncomingMessage]>
    client.flushHeaders()
    await once(client, 'continue')
    client.write(body.subarray(0, body.length / 2))
    const started = Date.now()
    const stopped = podman(['stop', container.name])
    await waitUntil('the service to log that it is shutting down', 10_000, async () =>
      /"msg":"shutting down"/.test(await container.logs()),
    )
    t.not(await container.inspect('{{.State.Status}}'), 'exited', 'not exited while the request is in flight')
    client.end(body.subarray(body.length / 2))
    const [answer] = await response
    t.equal(answer.statusCode, 200, `the in-flight request is answered 200 ${String(await answer.toArray())}`)
    await stopped
    t.equal(await container.inspect('{{.State.ExitCode}}'), '0', 'the service exits 0 by itself')
    t.ok(Date.now() - started < stopTimeoutMs, `stopped in ${Date.now() - started} ms, before the stop timeout`)
    const again = await create((await start(t, volume)).url, 42, 'another name')
    t.equal(again.statusCode, 409, 'the plant answered during the stop is stored: other content is 409')
  },
)

t.test(
  'podman kill -s KILL under load loses no plant answered 200; a new container on the volume has every one',
  async (t) => {
    const volume = await createVolume(t)
    const limitsOff = { RATE_LIMIT_MAX: '0' }
    const container = await start(t, volume, limitsOff)
    const answered: number[] = []
    let next = 1
    let killed = false
    const client = async () => {
      while (!killed) {
        const id = next++
        // A connection that dies with the container: the plant's fate unknown, not counted.
        const response = await create(container.url, id).catch(() => undefined)
        if (response?.statusCode === 200) answered.push(id)
      }
    }
    const load = Promise.all(Array.from({ length: 16 }, client))
    const loadStarted = Date.now()
    await waitUntil(
      '100 plants answered 200 and 3 s of load',
      40_000,
      async () => answered.length >= 100 && Date.now() - loadStarted >= 3000,
    )
    await podman(['kill', '--signal', 'KILL', container.name])
    killed = true
    await load
    t.equal(await container.inspect('{{.State.ExitCode}}'), '137', 'killed (128 + SIGKILL)')
    await podman(['rm', '--force', container.name])

    const second = await start(t, volume, limitsOff)
    const lost: number[] = []
    for (const id of answered) if ((await create(second.url, id, 'another name')).statusCode !== 409) lost.push(id)
    t.same(lost, [], `all ${answered.length} plants answered 200 are on the volume: other content is 409`)
  },
)

/** Walks the image's file system: what must not be there, what /app holds. */
const inspectFileSystem = String.raw`
const fs = require('fs'), path = require('path')
const found = { unwanted: fs.existsSync('/usr/lib/gcc') ? ['/usr/lib/gcc'] : [], app: fs.readdirSync('/app').sort(), dist: fs.readdirSync('/app/dist').sort(), usrLocalEtc: fs.readdirSync('/usr/local/etc') }
const walk = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    if (['/proc', '/sys', '/dev'].includes(file)) continue
    const tool = /\/s?bin$/.test(dir) && /^(cc|gcc|c\+\+|g\+\+|cpp|clang|make|python3?)$|^(gcc|g\+\+|cc|python3)[-.\d]/.test(entry.name)
    const testCode = file.startsWith('/app/') && !file.startsWith('/app/node_modules/') && /^(test|tests|bench)$|\.test\.[cm]?[jt]s$/.test(entry.name)
    if (tool || testCode || /^(\.npm|_cacache|\.?npmrc)$/.test(entry.name)) found.unwanted.push(file)
    if (entry.isDirectory()) walk(file)
  }
}
walk('/')
process.stdout.write(JSON.stringify(found))
`

t.test('the image carries no compiler, no npm cache, no test or benchmark code, no secrets', async (t) => {
  const found = JSON.parse(
    await podman(['run', '--rm', '--network=none', '--user=0', '--entrypoint=node', image, '-e', inspectFileSystem]),
  ) as Record<string, string[]>
  t.strictSame(
    found,
    // dist/node_modules: the Kysely bundle (docs/development.md, "Build").
    {
      unwanted: [],
      app: ['dist', 'node_modules', 'package.json'],
      dist: ['node_modules', 'openapi.yaml', 'scripts', 'service'],
      usrLocalEtc: [],
    },
    'no build tool, npm cache or configuration (nor in /usr/local/etc), test or benchmark code',
  )
  const config = await imageConfig()
  t.equal(config.User, 'node', 'runs as node by default')
  t.notMatch(config.Env.join('\n'), /TOKEN|DATABASE_URL|PASSWORD|SECRET|npm_config/i, 'no secret in the environment')
  t.notMatch(
    await podman(['history', '--no-trunc', '--format', '{{.CreatedBy}}', image]),
    /cafile|npmrc|TOKENS=|Bearer /i,
    'no secret or npm configuration in the build history',
  )
})
