/**
 * A client that cuts the connection at every phase of every kind of exchange, hundreds of times, against the service
 * process. No cut may crash, wedge or fail it; a failed authentication still counts against the client's address.
 */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { TOKEN } from '../helpers/app.ts'
import { cutEveryPhase, PHASES, requestShapes } from '../helpers/abort-client.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { startService } from '../helpers/process.ts'

const testEnv = (t: Test) => ({ PLANT_STORE_TOKENS: TOKEN, DATA_DIR: join(t.testdir(), 'data'), NODE_ENV: 'test' })

t.test(
  'a client that cuts the connection at any phase of any exchange neither stops nor fails the service',
  async (t) => {
    const service = await startService(t, { ...testEnv(t), LOG_LEVEL: 'info' })
    const exchanges = await cutEveryPhase({ url: service.url }, TOKEN, { rounds: 12, concurrency: 12 })
    t.equal(exchanges.length, 12 * PHASES.length * requestShapes(TOKEN).length, `${exchanges.length} exchanges cut`)
    t.equal(service.child.exitCode, null, 'the process is still running')
    t.equal((await postPlant(service.url, { id: 1, name: 'Ficus' })).statusCode, 200, 'and a valid create gets 200')
    t.notMatch(service.output(), /"level":(50|60)/, 'nothing is logged as an error or a fatal')
  },
)

t.test('a failed authentication cut right after its request still counts against the address', async (t) => {
  const service = await startService(t, { ...testEnv(t), AUTH_FAILURE_LIMIT_MAX: '5' })
  await cutEveryPhase({ url: service.url }, 'not-the-token', { rounds: 3, concurrency: 4 })
  const next = await postPlant(service.url, { id: 1, name: 'Ficus' }, { headers: { authorization: 'Bearer wrong' } })
  t.equal(next.statusCode, 429, 'the address is past its budget of failed authentications')
  t.equal(service.child.exitCode, null, 'the process is still running')
})
