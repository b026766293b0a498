/**
 * Cuts at every phase of every exchange, hundreds of times, against the service process: none crashes, wedges or fails
 * it; a failed authentication still counts.
 */
import t from 'tap'
import { TOKEN } from '../helpers/app.ts'
import { cutEveryPhase, PHASES, requestShapes } from '../helpers/abort-client.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { serviceEnv, startService } from '../helpers/process.ts'

t.test(
  'a client that cuts the connection at any phase of any exchange neither stops nor fails the service',
  async (t) => {
    const service = await startService(t, serviceEnv(t, { LOG_LEVEL: 'info' }))
    const exchanges = await cutEveryPhase({ url: service.url }, TOKEN, { rounds: 12, concurrency: 12 })
    t.equal(exchanges.length, 12 * PHASES.length * requestShapes(TOKEN).length, `${exchanges.length} exchanges cut`)
    t.equal(service.child.exitCode, null, 'the process is still running')
    t.equal((await postPlant(service.url, { id: 1, name: 'Ficus' })).statusCode, 200, 'and a valid create gets 200')
    t.notMatch(service.output(), /"level":(50|60)/, 'nothing is logged as an error or a fatal')
  },
)

t.test('a failed authentication cut right after its request still counts against the address', async (t) => {
  const service = await startService(t, serviceEnv(t, { AUTH_FAILURE_LIMIT_MAX: '5' }))
  await cutEveryPhase({ url: service.url }, 'not-the-token', { rounds: 3, concurrency: 4 })
  const next = await postPlant(service.url, { id: 1, name: 'Ficus' }, { headers: { authorization: 'Bearer wrong' } })
  t.equal(next.statusCode, 429, 'the address is past its budget of failed authentications')
  t.equal(service.child.exitCode, null, 'the process is still running')
})
