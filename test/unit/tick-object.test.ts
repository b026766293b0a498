/**
 * `keepTickObjectShape` (service/tick-object.ts): after a full collection while no tick
 * object is alive, `process.nextTick`'s literal feedback is megamorphic without it and
 * stays monomorphic with it, read from V8's own `%DebugPrint`.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'

const RUN = fileURLToPath(new URL('../fixtures/tick-object-run.ts', import.meta.url))

/** The feedback states of the tick-object literal's computed members, in order. */
async function literalFeedback(keep: boolean): Promise<string[]> {
  // Through `env -i`, without the process-info hooks tap adds to every child's NODE_OPTIONS: they change
  // the tick objects' maps by themselves (docs/benchmarks.md, "`process.nextTick` on V8's slow path").
  const environment = [`PATH=${process.env.PATH}`, `KEEP_TICK_OBJECT=${keep ? 1 : 0}`]
  const { stdout } = await promisify(execFile)('env', ['-i', ...environment, process.execPath, '--expose-gc', '--allow-natives-syntax', RUN], { maxBuffer: 16 * 1024 * 1024 })
  return [...stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1]!)
}

t.test('without it, a full collection with no tick object alive sends nextTick to the slow path', async (t) => {
  const states = await literalFeedback(false)
  t.ok(states.length > 0, 'V8 printed the literal feedback')
  // If this fails, this Node no longer has the slow path, and tick-object.ts can go.
  t.ok(states.includes('MEGAMORPHIC'), `feedback: ${states.join(', ')}`)
})

t.test('with it, the feedback stays monomorphic through that collection', async (t) => {
  const states = await literalFeedback(true)
  t.ok(states.length > 0, 'V8 printed the literal feedback')
  t.same([...new Set(states)], ['MONOMORPHIC'], `feedback: ${states.join(', ')}`)
})
