/**
 * Entry point (`npm start`): `process.nextTick` kept on V8's fast path (tick-object.ts), Node's
 * module compile cache on before any other module loads, then start.ts.
 * @module
 */
import { enableCompileCache } from 'node:module'
import { keepTickObjectShape } from './tick-object.js'

keepTickObjectShape()
enableCompileCache()
await import('./start.js')
