/**
 * `node api/check.ts [released.yaml] [current.yaml]` (`npm run check:compat`):
 * exits 1 and lists the breaking changes of the contract against the released one.
 *
 * @module
 */
import { main } from './compat.ts'

process.exitCode = main(process.argv.slice(2), console.log)
