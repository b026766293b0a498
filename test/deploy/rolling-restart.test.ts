/**
 * Two replicas on one PostgreSQL restarted in turn behind the gateway under load: no client sees an error, every 200 is
 * stored once.
 */
import t from 'tap'
import { postgresSchema, TOKEN } from '../helpers/app.ts'
import { countByStatus, startLoad } from '../helpers/create-load.ts'
import { startGateway } from '../helpers/nginx.ts'
import { waitUntil } from '../helpers/podman.ts'
import { startService } from '../helpers/process.ts'

/** A guard, not a speed target. */
const PROGRESS_TIMEOUT_MS = 5 * 60_000

const schema = await postgresSchema(t)
const env = { PLANT_STORE_TOKENS: TOKEN, DATABASE_URL: schema.url, NODE_ENV: 'test', TRUST_PROXY: '127.0.0.1' }
const replicas = await Promise.all([0, 1].map(() => startService(t, env)))
const gateway = await startGateway(t, replicas)

t.test(
  'replicas restarted one after the other under load: no client sees an error, and every 200 is stored once',
  async (t) => {
    const load = startLoad(gateway, TOKEN, 1n, 10)
    t.teardown(() => load.stop())
    await load.successes(200, 0, PROGRESS_TIMEOUT_MS)
    for (const [index, { url, stop }] of replicas.entries()) {
      t.equal(await stop(), 0, `replica ${index + 1} drained and exited 0`)
      await load.successes(50, performance.now(), PROGRESS_TIMEOUT_MS)
      await startService(t, { ...env, PORT: new URL(url).port })
      await waitUntil(
        `${url} to be ready`,
        PROGRESS_TIMEOUT_MS,
        async () => (await fetch(`${url}/health/ready`).catch(() => undefined))?.ok === true,
      )
      t.comment(`replica ${index + 1} restarted and ready; ${load.outcomes.length} creates so far`)
    }
    await load.successes(200, performance.now(), PROGRESS_TIMEOUT_MS)
    await load.stop()

    const statuses = countByStatus(load.outcomes)
    t.same(Object.keys(statuses), ['200'], `only 200, no failed exchange (0): ${JSON.stringify(statuses)}`)
    const ids = load.outcomes.filter((outcome) => outcome.status === 200).map((outcome) => String(outcome.id))
    const { rows } = await schema.client.query<{ id: string }>('select id::text from plant')
    t.same(rows.map((row) => row.id).sort(), ids.sort(), 'the plants answered 200 are stored, nothing else')
    const retried = gateway.accessLog().filter((entry) => String(entry.upstream).includes(', ')).length
    t.comment(`${ids.length} creates answered 200; ${retried} of them were passed to the other replica by the gateway`)
  },
)
