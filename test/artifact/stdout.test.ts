/** The built artifact's log under plain Node: each line within a second, everything at exit. */
import t from 'tap'
import { postPlant } from '../helpers/post-plant.ts'
import { RUNS_ARTIFACT, serviceEnv, startService } from '../helpers/process.ts'

t.test('a request line reaches stdout while the service runs, and the shutdown lines before it exits', async (t) => {
  t.ok(RUNS_ARTIFACT, 'runs the built artifact (TEST_SERVICE_SCRIPT)')
  const service = await startService(t, serviceEnv(t))
  const created = await postPlant(service.url, { id: 1, name: 'Ficus' })
  t.equal(created.statusCode, 200)
  // No more requests: only the once-a-second flush can write this line.
  await service.waitFor(new RegExp(`"requestId":"${created.headers['x-request-id']}".*"msg":"request completed"`))
  t.equal(await service.stop(), 0)
  t.match(service.output(), /"msg":"shutting down"/, 'written before the process exited')
})
