/**
 * A client that cuts the connection at any moment, against the service process: at every
 * phase of every kind of exchange, hundreds of times. No cut may crash, wedge or fail the
 * process, and a failed authentication is still counted against the client's address.
 */
import { join } from 'node:path'
import t from 'tap'
import { TOKEN } from '../helpers/app.ts'
import { cutEveryPhase, PHASES, requestShapes } from '../helpers/abort-client.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { startService } from '../helpers/process.ts'

t.test(
  'a client that cuts the connection at any phase of any exchange neither stops nor fails the service',
  async (t) => {
    const service = await startService(t, {
      PLANT_STORE_TOKENS: TOKEN,
      DATA_DIR: join(t.testdir(), 'data'),
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
    })
    const exchanges = await cutEveryPhase({ url: service.url }, TOKEN, { rounds: 12, concurrency: 12 })
    t.equal(exchanges.length, 12 * PHASES.length * requestShapes(TOKEN).length, `${exchanges.length} exchanges cut`)
    t.equal(service.child.exitCode, null, 'the process is still running')
    const create = await postPlant(service.url, { id: 1, name: 'Ficus' })
    t.equal(create.statusCode, 200, 'and a valid create gets 200')
    const failures = service
      .output()
      .split('\n')
      .filter((line) => /"level":(50|60)/.test(line))
    t.same(failures.slice(0, 3), [], 'nothing is logged as an error or a fatal')
  },
)

t.test('a failed authentication cut right after its request still counts against the address', async (t) => {
  const service = await startService(t, {
    PLANT_STORE_TOKENS: TOKEN,
    DATA_DIR: join(t.testdir(), 'data'),
    NODE_ENV: 'test',
    AUTH_FAILURE_LIMIT_MAX: '5',
  })
  await cutEveryPhase({ url: service.url }, 'not-the-token', { rounds: 3, concurrency: 4 })
  const next = await postPlant(
    service.url,
    { id: 1, name: 'Ficus' },
    { headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' } },
  )
  t.equal(next.statusCode, 429, 'the address is past its budget of failed authentications')
  t.equal(service.child.exitCode, null, 'the process is still running')
})
