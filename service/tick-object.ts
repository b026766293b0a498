/**
 * Keeps `process.nextTick` on V8's fast path for the life of the process.
 *
 * Node builds each tick object as an object literal with computed members
 * (`internal/process/task_queues`). V8 keeps the feedback of such a member monomorphic
 * or megamorphic, nothing between (`Runtime_DefineKeyedOwnPropertyInLiteral`), and
 * holds the maps of the literal's intermediate shapes weakly. A full collection that
 * runs while no tick object is alive removes those maps; the next tick object gets new
 * ones, the feedback turns megamorphic for good, and from then on V8's runtime adds
 * every tick object's members. One tick object kept alive keeps its maps, so the
 * feedback stays monomorphic. What it saves: docs/benchmarks.md, "`process.nextTick`
 * on V8's slow path".
 *
 * @module
 */
import { executionAsyncResource } from 'node:async_hooks'

let kept: object | undefined

/**
 * Keeps one tick object (the resource of a `process.nextTick` callback, as
 * `executionAsyncResource` returns it) for the life of the process. Call it first at
 * start-up: the feedback must still be monomorphic. Calling it again keeps nothing more.
 */
export function keepTickObjectShape(): void {
  process.nextTick(() => {
    kept ??= executionAsyncResource()
  })
}
