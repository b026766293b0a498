/**
 * The built service keeps `process.nextTick` on V8's fast path (service/tick-object.ts):
 * after requests, a full collection at an idle moment and more requests, V8's own print
 * shows the tick-object literal's feedback still monomorphic. Without the module it is
 * megamorphic by then (docs/benchmarks.md).
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { TOKEN } from '../helpers/app.js'
import { postPlant } from '../helpers/post-plant.js'
import { collectOutput, RUNS_ARTIFACT, watchService } from '../helpers/process.js'
import { literalFeedback, withoutTapHooks } from '../helpers/tick-feedback.js'

const PROBE = fileURLToPath(new URL('../fixtures/tick-feedback-probe.ts', import.meta.url))

t.test('after an idle full collection, the service as built still builds tick objects on the fast path', async (t) => {
  t.ok(RUNS_ARTIFACT, 'runs the built artifact (TEST_SERVICE_SCRIPT=dist/service/server.js, as npm run test:artifact sets it)')
  const environment = ['NODE_ENV=test', `PLANT_STORE_TOKENS=${TOKEN}`, `DATA_DIR=${join(t.testdir(), 'data')}`, 'HOST=127.0.0.1', 'PORT=0']
  const [command, args] = withoutTapHooks(environment, [process.execPath, '--expose-gc', '--import', PROBE, process.env.TEST_SERVICE_SCRIPT ?? ''])
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const service = await watchService(t, child, collectOutput(child))
  const create = async (from: number) => {
    for (let id = from; id < from + 5; id++) t.equal((await postPlant(service.url, { id, name: `plant ${id}` })).statusCode, 200)
  }
  await create(1)
  child.kill('SIGWINCH')
  await service.waitFor(/tick feedback probe: collected/)
  await create(100)
  child.kill('SIGWINCH')
  await service.waitFor(/tick feedback probe: printed/)
  // V8 prints through C's stdio, which flushes a pipe at exit.
  t.equal(await service.stop(), 0)
  const states = literalFeedback(service.output())
  t.ok(states.length > 0, 'V8 printed the literal feedback')
  t.same([...new Set(states)], ['MONOMORPHIC'], `feedback: ${states.join(', ')}`)
})
