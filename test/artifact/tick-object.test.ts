/**
 * The built service keeps `process.nextTick` on V8's fast path (service/tick-object.ts):
 * after requests, a full collection at an idle moment and more requests, V8's own print
 * shows the tick-object literal's feedback still monomorphic. The floor without it goes
 * megamorphic through the same steps (docs/benchmarks.md).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { TOKEN } from '../helpers/app.js'
import { postPlant } from '../helpers/post-plant.js'
import { OUTPUT_DEADLINE_MS, RUNS_ARTIFACT } from '../helpers/process.js'

const PROBE = fileURLToPath(new URL('../fixtures/tick-feedback-probe.ts', import.meta.url))

/** Resolves with the first match of `pattern` in what `read()` returns, checked on each chunk. */
function waitFor(child: ChildProcess, read: () => string, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(() => reject(new Error(`no ${pattern} within ${OUTPUT_DEADLINE_MS} ms:\n${read()}`))), OUTPUT_DEADLINE_MS)
    const check = () => {
      const match = pattern.exec(read())
      if (match) finish(() => resolve(match))
    }
    const finish = (settle: () => void) => {
      clearTimeout(timer)
      child.stdout!.off('data', check)
      child.stderr!.off('data', check)
      settle()
    }
    child.stdout!.on('data', check)
    child.stderr!.on('data', check)
    check()
  })
}

t.test('after an idle full collection, the service as built still builds tick objects on the fast path', async (t) => {
  t.ok(RUNS_ARTIFACT, 'runs the built artifact (TEST_SERVICE_SCRIPT=dist/service/server.js, as npm run test:artifact sets it)')
  // Through `env -i`: tap adds its process-info hooks to every child's NODE_OPTIONS, and they change the
  // tick objects' maps by themselves (docs/benchmarks.md, "`process.nextTick` on V8's slow path").
  const environment = [`PATH=${process.env.PATH}`, 'NODE_ENV=test', `PLANT_STORE_TOKENS=${TOKEN}`, `DATA_DIR=${join(t.testdir(), 'data')}`, 'HOST=127.0.0.1', 'PORT=0']
  const child = spawn('env', ['-i', ...environment, process.execPath, '--expose-gc', '--import', PROBE, process.env.TEST_SERVICE_SCRIPT ?? ''], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const closed = once(child, 'close')
  const read = () => output
  const [, url] = await waitFor(child, read, /Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
  const create = async (from: number) => {
    for (let id = from; id < from + 5; id++) t.equal((await postPlant(url!, { id, name: `plant ${id}` })).statusCode, 200)
  }
  await create(1)
  child.kill('SIGWINCH')
  await waitFor(child, read, /tick feedback probe: collected/)
  await create(100)
  child.kill('SIGWINCH')
  await waitFor(child, read, /tick feedback probe: printed/)
  // V8 prints through C's stdio, which flushes a pipe at exit.
  child.kill('SIGTERM')
  await closed
  const states = [...output.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1]!)
  t.ok(states.length > 0, 'V8 printed the literal feedback')
  t.same([...new Set(states)], ['MONOMORPHIC'], `feedback: ${states.join(', ')}`)
})
