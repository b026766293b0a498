/**
 * `--import` for tap's test processes (package.json "tap"."node-arg"), which run
 * TypeScript by Node's type stripping: a relative `.js` import from a `.ts` file
 * resolves to the `.ts` beside it, as `tsc` resolves it.
 *
 * @module
 */
import { registerHooks } from 'node:module'

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (context.parentURL?.endsWith('.ts') && /^\.\.?\/.*\.js$/.test(specifier)) {
      try {
        return nextResolve(`${specifier.slice(0, -3)}.ts`, context)
      } catch {
        // a JavaScript file after all
      }
    }
    return nextResolve(specifier, context)
  },
})
