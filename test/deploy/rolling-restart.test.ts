/**
 * A rolling restart behind the example gateway costs clients nothing: two service
 * processes on one PostgreSQL behind `deploy/nginx/` (real nginx, TLS), ten clients
 * creating plants through it the whole time, and the replicas restarted one after
 * the other as an orchestrator does (SIGTERM, wait for the exit, start, wait until
 * `/health/ready` answers 200, then the next). No client may see a non-2xx or a
 * failed exchange, and every plant answered 200 is stored exactly once.
 *
 * Needs nginx, openssl and PostgreSQL at 127.0.0.1:5432.
 *
 * @module
 */
import { Agent, request } from 'node:https'
import t from 'tap'
import { closedPort, postgresSchema, TOKEN } from '../helpers/app.js'
import { authorized, PLANTS } from '../helpers/gateway-client.js'
import { startGateway } from '../helpers/nginx.js'
import { type ServiceProcess, startService } from '../helpers/process.js'

/** Concurrent clients, each sending one create after the other from a loopback address of its own. */
const CLIENTS = 10
/**
 * Each client's pace: at most one create per this many milliseconds, half the
 * gateway's per-address rate (100 a second), so that its limit is not what is tested.
 */
const PACE_MS = 20
/** An upper bound on the whole run, so the load always stops. */
const LOAD_DEADLINE_MS = 10 * 60_000

const schema = await postgresSchema(t)
const ports = [await closedPort(), await closedPort()]
const env = (port: number) => ({ PLANT_STORE_TOKENS: TOKEN, DATABASE_URL: schema.url, NODE_ENV: 'test', PORT: String(port), TRUST_PROXY: '127.0.0.1' })
const replicas: ServiceProcess[] = await Promise.all(ports.map((port) => startService(t, env(port))))
const gateway = await startGateway(t, { upstreams: ports.map((port) => `127.0.0.1:${port}`) })

/** What the clients saw. */
const seen = { created: [] as number[], other: [] as string[], failed: [] as string[] }
let loading = true

/** POSTs one plant through the gateway; resolves with the status, or rejects when the exchange fails. */
function create(agent: Agent, localAddress: string, id: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ id, name: `Fern ${id}` })
    const sent = request(`${gateway.origin}${PLANTS}`, { method: 'POST', agent, localAddress, ca: gateway.ca, servername: 'localhost', headers: { ...authorized(TOKEN), 'content-length': Buffer.byteLength(body) } }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode!))
      response.on('error', reject)
    })
    sent.on('error', reject)
    sent.end(body)
  })
}

/** One client: creates plants with ids of its own over a kept-alive connection until the load stops. */
async function client(index: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const deadline = Date.now() + LOAD_DEADLINE_MS
  for (let id = index * 1_000_000 + 1; loading && Date.now() < deadline; id++) {
    const started = Date.now()
    try {
      const status = await create(agent, `127.0.0.${10 + index}`, id)
      if (status === 200) seen.created.push(id)
      else seen.other.push(`${id}: ${status}`)
    } catch (error) {
      seen.failed.push(`${id}: ${(error as Error).message}`)
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, PACE_MS - (Date.now() - started))))
  }
  agent.destroy()
}

/** Resolves once `replica` answers `GET /health/ready` with 200. */
async function ready(replica: ServiceProcess): Promise<void> {
  for (;;) {
    const status = await fetch(`${replica.url}/health/ready`).then((response) => response.status, () => 0)
    if (status === 200) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Waits until the clients have had `count` more creates answered 200. */
async function creates(count: number): Promise<void> {
  const target = seen.created.length + count
  while (seen.created.length < target && loading) await new Promise((resolve) => setTimeout(resolve, 20))
}

t.test('replicas restarted one after the other under load: no client sees an error, and every 200 is stored once', async (t) => {
  const load = Promise.all(Array.from({ length: CLIENTS }, (_, index) => client(index)))
  t.teardown(() => void (loading = false))
  await creates(200)
  for (const [index, port] of ports.entries()) {
    t.equal(await replicas[index]!.stop('SIGTERM'), 0, `replica ${index + 1} drained and exited 0`)
    await creates(50)
    replicas[index] = await startService(t, env(port))
    await ready(replicas[index]!)
    t.comment(`replica ${index + 1} restarted and ready; ${seen.created.length} creates so far`)
  }
  await creates(200)
  loading = false
  await load

  t.same(seen.other, [], 'no answer but 200')
  t.same(seen.failed, [], 'no failed exchange')
  const ids = seen.created
  const { rows } = await schema.client.query<{ stored: string; total: string }>(
    'select count(*) filter (where id = any($1::bigint[])) as stored, count(*) as total from plant',
    [ids.map(String)],
  )
  t.equal(Number(rows[0]!.stored), ids.length, `all ${ids.length} plants answered 200 are stored`)
  t.equal(Number(rows[0]!.total), ids.length, 'nothing else is stored (the id is the primary key: none twice)')
  const retried = gateway.accessLog().filter((entry) => String(entry.upstream).includes(', ')).length
  t.comment(`${ids.length} creates answered 200; ${retried} of them were passed to the other replica by the gateway`)
})
