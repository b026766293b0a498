/**
 * Bundles the service process into `dist/service/` with esbuild: the artifact the
 * image and `npm start` run. `server.js` turns Node's compile cache on and imports
 * `start-<hash>.js`, which holds the service and its dependencies in one file;
 * beside them are the modules loaded only when configured (tracing, CORS) and the
 * chunks they share. It replaces the `server.js` `tsc` wrote; the rest of `tsc`'s
 * output (`scripts/`, the modules `bench/` imports) stays as it is.
 *
 * Why: Node resolves, reads and links each module of a start one at a time; the
 * service's 1,000 files (Kysely's 257 alone: 85 ms) cost more of its start than
 * the code in them runs.
 *
 * Run after `tsc` (`npm run build` does): `node scripts/bundle.ts [dist directory]`.
 * The directory (default `dist`) must lie below a `package.json` with `"type":
 * "module"` and where Node finds the packages left outside the bundle (a
 * `node_modules` beside it or above).
 *
 * @module
 */
import { cpSync, readdirSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = resolve(import.meta.dirname, '..')
const dist = resolve(process.argv[2] ?? join(root, 'dist'))

/**
 * Packages loaded from `node_modules` at run time, not bundled, each for a reason:
 * files of their own they find by their own path, a native addon, or loading that
 * only a configured feature does (the bundle would hold them for nothing).
 */
const EXTERNAL = [
  // A native addon, found beside its own files.
  'better-sqlite3',
  // Serves Swagger UI's files from its own directory.
  '@fastify/swagger-ui',
  // Shared with @fastify/swagger-ui: one copy loaded, not two.
  'yaml',
  // Starts transports (pino-pretty on a terminal) in worker threads by file path.
  'pino',
  'pino-pretty',
  // Loaded only when PostgreSQL or Redis is configured.
  'pg',
  'ioredis',
  // Tracing (loaded only when configured): instrumentations hook the modules they
  // trace by name. @opentelemetry/api is bundled: prom-client loads it at every start,
  // and copies of one version share its global state by design.
  '@fastify/otel',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/core',
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-node',
]

const outdir = join(dist, 'service')
/** The bundle's files beside server.js: `<name>-<hash>.js` (`tsc` writes none of that form). */
const BUNDLE_FILE = /^[\w-]+-[A-Z0-9]{8}\.js$/

// A previous build's files, whose hashes this build may not write again.
for (const file of readdirSync(outdir)) if (BUNDLE_FILE.test(file)) rmSync(join(outdir, file))
await build({
  entryPoints: [join(root, 'service/server.ts')],
  outdir,
  // server.ts imports start.ts dynamically, once the compile cache is on: split off,
  // the bundle of the rest loads after that, and is compiled once and cached.
  bundle: true,
  splitting: true,
  chunkNames: '[name]-[hash]',
  format: 'esm',
  platform: 'node',
  target: 'node24',
  tsconfig: join(root, 'tsconfig.build.json'),
  external: EXTERNAL,
  // The CommonJS packages in the bundle call `require` for Node's modules and the
  // external packages; an ES module has none of its own.
  banner: { js: "import { createRequire as createRequire_ } from 'node:module'; const require = createRequire_(import.meta.url);" },
  // Function and class names as written: stack traces, and plugin names Fastify reads.
  keepNames: true,
  logLevel: 'warning',
})

// The OpenAPI meta-schemas glue's validator reads at start, from beside its code.
cpSync(fileURLToPath(new URL('schemas', import.meta.resolve('@seriousme/openapi-schema-validator'))), join(outdir, 'schemas'), { recursive: true })
