/**
 * Behind the example gateway: clients that pipeline and never read, and idle connections at MAX_CONNECTIONS, keep no
 * create or probe waiting.
 */
import t from 'tap'
import { freshStore, TOKEN } from '../helpers/app.ts'
import { residentMb } from '../helpers/machine.ts'
import { authorized, post, send, startGateway } from '../helpers/nginx.ts'
import { startService } from '../helpers/process.ts'
import { connected, exchange, wholeRequest } from '../helpers/raw-http.ts'

t.setTimeout(5 * 60_000)

const { dataDir } = await freshStore(t)
const service = await startService(t, { DATA_DIR: dataDir, PLANT_STORE_TOKENS: TOKEN, MAX_CONNECTIONS: '20' })
const gateway = await startGateway(t, [service])
const create = (id: number) => post(JSON.stringify({ id, name: 'Fern' }), authorized(TOKEN))

t.test(
  'idle connections after a 200 fill MAX_CONNECTIONS: a create through the gateway is answered 200 within 2 s',
  async (t) => {
    for (let index = 0; index < 20; index++) {
      const socket = await connected({ url: service.url, localAddress: '127.0.0.2' }, t)
      socket.on('error', () => {})
      const answered = new Promise((resolve) => socket.once('data', resolve))
      socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n')
      await answered
    }
    const response = await send(gateway, create(1))
    t.equal(response.statusCode, 200)
    t.ok(response.elapsedMs < 2000, `answered in ${response.elapsedMs} ms`)
  },
)

t.test(
  '20 clients pipelining 3,000 requests through the gateway and never reading: creates and probes go on',
  async (t) => {
    const pid = service.child.pid!
    const before = residentMb(pid)
    for (let index = 0; index < 20; index++) {
      // From an address of its own: the per-address limits answer the flood with 429, never the creates.
      const socket = await connected({ url: gateway.origin, ca: gateway.ca, localAddress: '127.0.0.2' }, t)
      socket.on('error', () => {})
      socket.pause()
      socket.write(`GET ${new URL(gateway.url).pathname}/docs/json HTTP/1.1\r\nHost: localhost\r\n\r\n`.repeat(3000))
    }
    let worstMs = 0
    const statuses: string[] = []
    for (let id = 2, end = Date.now() + 15_000; Date.now() < end; id++) {
      const live = await exchange(service, wholeRequest('GET', '/health/live'), 10_000)
      const created = await send(gateway, create(id))
      statuses.push(`probe ${live.statusCode}, create ${created.statusCode}`)
      worstMs = Math.max(worstMs, live.elapsedMs, created.elapsedMs)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    // One assertion for all rounds, so the test's count does not depend on how many fit in 15 s.
    t.strictSame(
      statuses.filter((pair) => pair !== 'probe 200, create 200'),
      [],
      `each of ${statuses.length} probes and creates answered 200`,
    )
    t.ok(worstMs <= 5000, `the slowest probe or create took ${worstMs} ms (target 1 s)`)
    t.ok(residentMb(pid) - before <= 100, `RSS grew ${(residentMb(pid) - before).toFixed(1)} MB`)
  },
)
