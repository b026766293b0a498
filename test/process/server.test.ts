/**
 * The service process: durability across `kill -9`, tokens at start-up, graceful shutdown, failing starts, no secret
 * logged.
 */
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { JSON_HEADERS, TOKEN } from '../helpers/app.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { runToExit, serviceEnv, startService } from '../helpers/process.ts'

const WRONG_TOKEN = 'wrong-token-0123456789abcdef'
const statusOf = async (url: string, id: number, token = TOKEN) =>
  (await postPlant(url, { id, name: 'Ficus' }, { headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` } }))
    .statusCode

t.test(
  'a 200 means stored: plants survive kill -9 and a restart; a trace-level log holds no token; a port in use stops ' +
    'a start',
  async (t) => {
    const env = serviceEnv(t)
    const first = await startService(t, { ...env, LOG_LEVEL: 'trace' })
    const bodies = Array.from(
      { length: 20 },
      (_, i) => `{"id":${2n ** 53n + 1n + BigInt(i)},"name":"plant ${i}"${i % 2 ? ',"tag":"odd"' : ''}}`,
    )
    const created = await Promise.all(bodies.map((body) => postPlant(first.url, body)))
    const statuses = (responses: Array<{ statusCode: number }>) => responses.map((r) => r.statusCode)
    t.same(statuses(created), Array(20).fill(200))
    t.equal(await statusOf(first.url, 1, WRONG_TOKEN), 401)
    t.equal((await postPlant(first.url, '{"id":')).statusCode, 400)
    const taken = await runToExit({ ...env, DATA_DIR: join(t.testdir(), 'other'), PORT: new URL(first.url).port })
    t.not(taken.code, 0, 'a second process on the same port exits non-zero')
    t.match(taken.output, /EADDRINUSE/, JSON.stringify(taken))
    t.equal(await first.stop('SIGKILL'), null, 'killed, not exited')
    t.match(first.output(), /"requestId"/, 'the run did log requests')
    t.notMatch(first.output(), TOKEN, 'the configured token is not logged')
    t.notMatch(first.output(), WRONG_TOKEN, 'a presented token is not logged')

    const second = await startService(t, env)
    const replays = await Promise.all(bodies.map((body) => postPlant(second.url, body)))
    const bodiesOf = (responses: Array<{ body: string }>) => responses.map((r) => r.body)
    t.same(bodiesOf(replays), bodiesOf(created), 'every plant is still there: identical content replays')
    const conflicts = await Promise.all(bodies.map((body) => postPlant(second.url, body.replace('plant', 'other'))))
    t.same(statuses(conflicts), Array(20).fill(409), 'and different content conflicts')
    t.equal(await second.stop(), 0)
  },
)

t.test(
  'SIGTERM: readiness turns 503 for the drain delay while requests are still served, then the process exits 0',
  async (t) => {
    const service = await startService(t, serviceEnv(t, { SHUTDOWN_DRAIN_DELAY_MS: '3000' }))
    t.equal((await fetch(`${service.url}/health/ready`)).status, 200)
    const exit = service.stop('SIGTERM')
    let ready = 200
    for (const until = Date.now() + 2500; ready === 200 && Date.now() < until;)
      ready = (await fetch(`${service.url}/health/ready`)).status
    t.equal(ready, 503, 'readiness reports draining')
    const during = await postPlant(service.url, { id: 1, name: 'Ficus' })
    t.equal(during.statusCode, 200, 'still served during the drain delay')
    t.equal(during.headers.connection, 'close', 'and the connection is not kept')
    t.equal(await exit, 0)
    t.match(service.output(), /"signal":"SIGTERM".*"msg":"shutting down"/)
  },
)

t.test(
  'a reader of stdout that goes away costs the logs, never the service: it serves and stops on SIGTERM',
  async (t) => {
    const service = await startService(t, serviceEnv(t))
    service.child.stdout!.destroy()
    for (let id = 1; id <= 3; id++)
      t.equal(await statusOf(service.url, id), 200, 'served while its lines meet a closed pipe')
    await sleep(1500) // past the buffered log's flush interval (1 s): the lines above are written, and fail
    t.equal(await statusOf(service.url, 4), 200, 'still served after the failed write')
    t.equal(await service.stop('SIGTERM'), 0, 'and exits on SIGTERM')
  },
)

t.test('production without a token, or an invalid variable, stops the start (exit 1) saying why', async (t) => {
  const noToken = await runToExit({ NODE_ENV: 'production', DATA_DIR: join(t.testdir(), 'data') })
  t.match(noToken, { code: 1, output: /Refusing to start: NODE_ENV=production and no bearer token is configured/ })
  const invalid = await runToExit({ NODE_ENV: 'test', PORT: 'eighty', DATA_DIR: join(t.testdir(), 'data') })
  t.match(invalid, { code: 1, output: /Invalid configuration: .*\bPORT\b/ })
})

t.test(
  'development without a token generates one, prints it once with the Swagger UI address, and it works',
  async (t) => {
    const service = await startService(t, { NODE_ENV: 'development', DATA_DIR: join(t.testdir(), 'data') })
    await service.waitFor(/Swagger UI: /)
    const token = /generated a token for this run:\s+(\S+)/.exec(service.output())?.[1]
    t.ok(token, 'a token is printed')
    t.match(service.output(), new RegExp(`Swagger UI: ${service.url}/docs`))
    t.equal(service.output().split(token!).length - 1, 1, 'printed exactly once')
    t.equal(await statusOf(service.url, 1, token), 200)
    t.equal(await statusOf(service.url, 2), 401, 'no other token works')
    await service.stop()
  },
)
