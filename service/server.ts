/**
 * The Plant Store process's entry point (`npm start`; every variable is listed in
 * docs/configuration.md). It turns Node's module compile cache on before any other module
 * loads, so that a restart reuses the compiled code of the previous start, then
 * starts the service (`start.ts`). The cache lives in `<os.tmpdir()>/node-compile-cache`,
 * or where Node's own `NODE_COMPILE_CACHE` says; when it cannot be written, Node
 * compiles as usual.
 *
 * @module
 */
import { enableCompileCache } from 'node:module'

enableCompileCache()
await import('./start.js')
