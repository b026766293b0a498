/**
 * Entry point (`npm start`): Node's module compile cache on before any other module loads, then start.ts.
 * @module
 */
import { enableCompileCache } from 'node:module'

enableCompileCache()
await import('./start.js')
