/**
 * When an A/B run's baseline may run on this tree's installed packages
 * (bench/baseline.ts, `BENCH_BASELINE_INSTALL=auto`): its runtime packages and build
 * tools must be installed here, the same versions at the same paths.
 */
import t from 'tap'
import { runtimePackageDifferences } from './baseline.ts'

const lock = (packages: Record<string, object>) => ({
  lockfileVersion: 3,
  packages: { '': { name: 'plant-store' }, ...packages },
})
const fastify = { version: '5.12.8', integrity: 'sha512-a' }
const typescript = { version: '5.9.3', integrity: 'sha512-t', dev: true }

t.test('the same runtime packages and build tools: linkable, whatever else differs', async (t) => {
  const ref = lock({
    'node_modules/fastify': fastify,
    'node_modules/typescript': typescript,
    'node_modules/tap': { version: '21.0.0', dev: true },
  })
  const installed = lock({
    'node_modules/fastify': fastify,
    'node_modules/typescript': typescript,
    'node_modules/tap': { version: '21.8.0', dev: true },
    'node_modules/content-type': { version: '1.0.5' },
  })
  t.same(
    runtimePackageDifferences(ref, installed),
    [],
    'a dev package other than the build tools, and packages only installed here, do not matter',
  )
})

t.test('a runtime package or a build tool of another version, or missing: not linkable', async (t) => {
  const installed = lock({ 'node_modules/fastify': fastify, 'node_modules/typescript': typescript })
  t.same(
    runtimePackageDifferences(
      lock({ 'node_modules/fastify': { version: '5.12.7', integrity: 'sha512-b' } }),
      installed,
    ),
    ['node_modules/fastify (5.12.8 installed, 5.12.7 wanted)'],
  )
  t.same(
    runtimePackageDifferences(lock({ 'node_modules/typescript': { ...typescript, version: '5.8.0' } }), installed),
    ['node_modules/typescript (5.9.3 installed, 5.8.0 wanted)'],
  )
  t.same(runtimePackageDifferences(lock({ 'node_modules/pg': { version: '8.23.1' } }), installed), [
    'node_modules/pg (not installed)',
  ])
  t.same(
    runtimePackageDifferences(lock({ 'node_modules/a/node_modules/b': { version: '1.0.0' } }), installed),
    ['node_modules/a/node_modules/b (not installed)'],
    'nested paths too',
  )
})

t.test('optional packages not installed here (other platforms’ binaries) are left out', async (t) => {
  const installed = lock({ 'node_modules/@esbuild/linux-x64': { version: '0.27.7', optional: true } })
  const ref = lock({
    'node_modules/@esbuild/linux-x64': { version: '0.27.7', optional: true },
    'node_modules/@esbuild/darwin-arm64': { version: '0.27.7', optional: true },
  })
  t.same(runtimePackageDifferences(ref, installed), [])
  t.same(runtimePackageDifferences(undefined, installed), [], 'no lock file: nothing to compare')
})
