/**
 * `keepTickObjectShape` (service/tick-object.ts): after a full collection while no tick
 * object is alive, `process.nextTick`'s literal feedback is megamorphic without it and
 * stays monomorphic with it, read from V8's own `%DebugPrint`.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { literalFeedback, withoutTapHooks } from '../helpers/tick-feedback.js'

const RUN = fileURLToPath(new URL('../fixtures/tick-object-run.ts', import.meta.url))

/** The literal's feedback after the fixture's run, with or without `keepTickObjectShape`. */
async function feedbackAfterRun(keep: boolean): Promise<string[]> {
  const [command, args] = withoutTapHooks([`KEEP_TICK_OBJECT=${keep ? 1 : 0}`], [process.execPath, '--expose-gc', '--allow-natives-syntax', RUN])
  const { stdout } = await promisify(execFile)(command, args, { maxBuffer: 16 * 1024 * 1024 })
  return literalFeedback(stdout)
}

t.test('without it, a full collection with no tick object alive sends nextTick to the slow path', async (t) => {
  const states = await feedbackAfterRun(false)
  t.ok(states.length > 0, 'V8 printed the literal feedback')
  // If this fails, this Node no longer has the slow path, and tick-object.ts can go.
  t.ok(states.includes('MEGAMORPHIC'), `feedback: ${states.join(', ')}`)
})

t.test('with it, the feedback stays monomorphic through that collection', async (t) => {
  const states = await feedbackAfterRun(true)
  t.ok(states.length > 0, 'V8 printed the literal feedback')
  t.same([...new Set(states)], ['MONOMORPHIC'], `feedback: ${states.join(', ')}`)
})
