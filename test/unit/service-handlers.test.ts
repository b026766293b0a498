/**
 * Type-level test of service/operations/handlers.ts: a service class is checked against the
 * types generated from its contract. The fixture contract (openapi.yaml plus
 * `getPlant`, GET /plants/{id}) is generated with openapi-typescript into a
 * temporary directory, then `tsc --noEmit` compiles a fixture service against it:
 * without `getPlant` it fails naming the operation; with it, it passes.
 *
 * @module
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { generateTypes } from '../../api/types.js'
import { fixtureContract } from '../fixtures/plant-contract.js'
import { CommandError, run } from '../helpers/command.js'

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const handlers = fileURLToPath(new URL('../../service/operations/handlers.js', import.meta.url))
/** How long one compile may take on a busy machine (tap's limit for the file is the outer bound). */
const TSC_TIMEOUT_MS = 240_000

/** A fixture service over the fixture's `operations`; `getPlant` is the extra method, if any. */
function fixtureService(getPlant: string): string {
  return `import type { operations } from './openapi.js'
import type { OperationRequest, ServiceHandlers, SuccessBody } from ${JSON.stringify(handlers)}

export class FixtureService implements ServiceHandlers<operations> {
  async createPlant(request: OperationRequest<operations['createPlant']>): Promise<SuccessBody<operations['createPlant']>> {
    const id: bigint = request.body.id
    return { name: request.body.name + id }
  }
${getPlant}
}
`
}

/** Runs `tsc --noEmit` on `service.ts` in a directory of its own beside the generated types. */
async function compile(dir: string, generated: string, service: string): Promise<{ code: number; output: string }> {
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
  writeFileSync(join(dir, 'openapi.ts'), generated)
  writeFileSync(join(dir, 'service.ts'), service)
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: [] },
      files: ['service.ts'],
    }),
  )
  try {
    const { stdout } = await run(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], { timeoutMs: TSC_TIMEOUT_MS })
    return { code: 0, output: stdout }
  } catch (error) {
    if (!(error instanceof CommandError) || error.exitCode === null) throw error
    return { code: error.exitCode, output: error.stdout }
  }
}

t.test('a service class must have a method, typed by the document, for each operation', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-handlers-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const generated = await generateTypes(fixtureContract() as Parameters<typeof generateTypes>[0])
  t.match(generated, /getPlant: \{/, 'the fixture contract has getPlant')
  const getPlant = (idType: string) => `  async getPlant(request: OperationRequest<operations['getPlant']>): Promise<SuccessBody<operations['getPlant']>> {
    const id: ${idType} = request.params.id
    return { name: String(id) }
  }`
  const [without, withMethod, mistyped, rounded] = await Promise.all([
    compile(mkdtempSync(join(dir, 'without-')), generated, fixtureService('')),
    compile(mkdtempSync(join(dir, 'with-')), generated, fixtureService(getPlant('bigint'))),
    compile(mkdtempSync(join(dir, 'mistyped-')), generated, fixtureService(getPlant('boolean'))),
    compile(mkdtempSync(join(dir, 'rounded-')), generated, fixtureService(getPlant('number'))),
  ])
  t.not(without.code, 0, 'tsc fails without getPlant')
  t.match(without.output, /error TS2420: Class 'FixtureService' incorrectly implements interface 'ServiceHandlers<operations>'/)
  t.match(without.output, /Property 'getPlant' is missing in type 'FixtureService'/)
  t.equal(withMethod.code, 0, withMethod.output)
  t.not(mistyped.code, 0, 'a parameter read as another type than the document says fails')
  t.match(mistyped.output, /service\.ts\(\d+,11\): error TS2322: Type 'bigint' is not assignable to type 'boolean'/)
  t.not(rounded.code, 0, 'an int64 read as a number, which would round it, fails')
  t.match(rounded.output, /service\.ts\(\d+,11\): error TS2322: Type 'bigint' is not assignable to type 'number'/)
})
