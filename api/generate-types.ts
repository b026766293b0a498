/**
 * `node api/generate-types.ts [--check] [contract] [output]` (`npm run generate`,
 * `npm run check:types`): see {@link main}.
 *
 * @module
 */
import { main } from './types.ts'

process.exitCode = await main(process.argv.slice(2))
