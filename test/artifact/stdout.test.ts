/**
 * What holds only for the built artifact under plain Node (`npm run test:artifact`):
 * tap's TypeScript loader (`module.register`) creates `process.stdout` in a service
 * process itself, which is what this file checks the service never does.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { TOKEN } from '../helpers/app.js'
import { postPlant } from '../helpers/post-plant.js'
import { RUNS_ARTIFACT, startService } from '../helpers/process.js'

t.test('stdout stays a blocking pipe: a log reader that falls behind holds a write as long as it needs, not 100 ms', async (t) => {
  t.ok(RUNS_ARTIFACT, 'runs the built artifact (TEST_SERVICE_SCRIPT=dist/service/server.js, as npm run test:artifact sets it)')
  const service = await startService(t, { PLANT_STORE_TOKENS: TOKEN, DATA_DIR: join(t.testdir(), 'data'), NODE_ENV: 'test' })
  t.equal((await postPlant(service.url, { id: 1, name: 'Ficus' })).statusCode, 200)
  for (const path of ['/docs/', '/metrics', '/health/ready']) t.equal((await fetch(`${service.url}${path}`)).status, 200, path)
  // The log's flush (at least once a second) has written its lines to the pipe.
  await service.waitFor(/"msg":"request completed"/)
  // O_NONBLOCK (octal 4000, open(2)) would turn a full pipe into EAGAIN, which sonic-boom's synchronous write meets with a 100 ms sleep.
  const flags = Number.parseInt(/^flags:\s+(\d+)$/m.exec(readFileSync(`/proc/${service.child.pid}/fdinfo/1`, 'utf8'))![1]!, 8)
  t.equal(flags & 0o4000, 0, 'fd 1 is not O_NONBLOCK')
  await service.stop()
})
