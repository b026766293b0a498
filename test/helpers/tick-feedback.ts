/**
 * Reading V8's feedback for `process.nextTick` in a child process (service/tick-object.ts):
 * how to start the child, and what its `%DebugPrint` says.
 *
 * @module
 */

/**
 * `env -i` with `environment` (`NAME=value` entries), then `argv`: the child runs without the
 * process-info hooks tap adds to every child's NODE_OPTIONS, which change the tick objects'
 * maps by themselves (docs/benchmarks.md, "`process.nextTick` on V8's slow path").
 * @returns the command and its arguments, for `spawn` or `execFile`.
 */
export function withoutTapHooks(environment: readonly string[], argv: readonly string[]): [string, string[]] {
  return ['env', ['-i', `PATH=${process.env.PATH}`, ...environment, ...argv]]
}

/** The feedback states (`MONOMORPHIC`, `MEGAMORPHIC`, …) of the tick-object literal's computed members, in order, from `%DebugPrint(process.nextTick)`. */
export function literalFeedback(output: string): string[] {
  return [...output.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1]!)
}
