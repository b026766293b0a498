/**
 * `keepTickObjectShape` (service/tick-object.ts): after a full collection while no tick
 * object is alive, `process.nextTick`'s literal feedback is megamorphic without it and
 * stays monomorphic with it, read from V8's own `%DebugPrint`.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'

const RUN = fileURLToPath(new URL('../fixtures/tick-object-run.ts', import.meta.url))

/** The feedback states of the tick-object literal's computed members, in order. */
async function literalFeedback(t: Test, keep: boolean): Promise<string[]> {
  // A file, not a pipe: V8 prints through C's stdio, which a pipe's reader can cut short at exit.
  const file = join(t.testdir(), 'debug-print.txt')
  const out = openSync(file, 'w')
  // Through `env -i`: tap adds its process-info hooks to every child's NODE_OPTIONS, and their work
  // before the run changes the tick objects' maps by itself (an async id first stored as a small integer).
  const child = spawn('env', ['-i', `PATH=${process.env.PATH}`, `KEEP_TICK_OBJECT=${keep ? 1 : 0}`, process.execPath, '--expose-gc', '--allow-natives-syntax', RUN], {
    stdio: ['ignore', out, 'inherit'],
  })
  const [code] = (await once(child, 'close')) as [number | null]
  closeSync(out)
  t.equal(code, 0, 'the run exited 0')
  return [...readFileSync(file, 'utf8').matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1]!)
}

t.test('without it, a full collection with no tick object alive sends nextTick to the slow path', async (t) => {
  const states = await literalFeedback(t, false)
  t.ok(states.length > 0, 'V8 printed the literal feedback')
  // If this fails, this Node no longer has the slow path, and tick-object.ts can go.
  t.ok(states.includes('MEGAMORPHIC'), `feedback: ${states.join(', ')}`)
})

t.test('with it, the feedback stays monomorphic through that collection', async (t) => {
  const states = await literalFeedback(t, true)
  t.ok(states.length > 0, 'V8 printed the literal feedback')
  t.same([...new Set(states)], ['MONOMORPHIC'], `feedback: ${states.join(', ')}`)
})
