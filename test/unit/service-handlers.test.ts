/** service/operations/handlers.ts: a service class checked by `tsc` against the types of the fixture contract. */
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { generateTypes } from '../../api/types.ts'
import { fixtureContract } from '../fixtures/plant-contract.ts'
import { CommandError, run } from '../helpers/command.ts'

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const handlers = fileURLToPath(new URL('../../service/operations/handlers.js', import.meta.url))

const contract = fixtureContract()
/** The fixture contract's operationIds but getPlant. */
const others = Object.values(contract.paths)
  .flatMap((item = {}) => Object.values(item).map((operation) => (operation as { operationId?: string }).operationId))
  .filter((operationId): operationId is string => operationId !== undefined && operationId !== 'getPlant')

const method = (
  operationId: string,
  body: string,
) => `  async ${operationId}(request: OperationRequest<operations['${operationId}']>): Promise<SuccessBody<operations['${operationId}']>> {
${body}
  }`

/** A service of every other operation, and `getPlant` when given. */
function fixtureService(getPlant: string | undefined) {
  const methods = [
    ...others.map((operationId) => method(operationId, '    throw new Error(`not under test: ${request.url}`)')),
    ...(getPlant === undefined ? [] : [getPlant]),
  ]
  return `import type { operations } from './openapi.ts'
import type { OperationRequest, ServiceHandlers, SuccessBody } from ${JSON.stringify(handlers)}

export class FixtureService implements ServiceHandlers<operations> {
${methods.join('\n')}
}
`
}

/** A getPlant that reads its int64 path parameter as `idType`. */
const getPlant = (idType: string) =>
  method('getPlant', `    const id: ${idType} = request.params.id\n    return { name: String(id) }`)

t.test('a service class must have a method, typed by the document, for each operation', async (t) => {
  const generated = await generateTypes(contract as Parameters<typeof generateTypes>[0])
  t.match(generated, /getPlant: \{/, 'the fixture contract has getPlant')
  const services = {
    without: fixtureService(undefined),
    with: fixtureService(getPlant('bigint')),
    rounded: fixtureService(getPlant('number')),
  }
  const compilerOptions = { target: 'ES2023', module: 'NodeNext', strict: true, noEmit: true, types: [] }
  const files = Object.fromEntries(Object.entries(services).map(([name, source]) => [`${name}.ts`, source]))
  const tsconfig = JSON.stringify({ compilerOptions, files: Object.keys(files) })
  const dir = t.testdir({
    ...files,
    'package.json': '{"type":"module"}',
    'openapi.ts': generated,
    'tsconfig.json': tsconfig,
  })

  let output = ''
  try {
    await run(process.execPath, [tsc, '-p', '.', '--pretty', 'false'], { cwd: dir, timeoutMs: 240_000 })
  } catch (error) {
    if (!(error instanceof CommandError) || error.exitCode === null) throw error
    output = error.stdout
  }
  const errors = (file: string) =>
    output
      .split(/\n(?=\S)/)
      .filter((error) => error.startsWith(`${file}(`))
      .join('\n')
  t.match(
    errors('without.ts'),
    /error TS2420: Class 'FixtureService' incorrectly implements interface 'ServiceHandlers<operations>'/,
    'tsc fails without getPlant',
  )
  t.match(errors('without.ts'), /Property 'getPlant' is missing in type 'FixtureService'/)
  t.equal(errors('with.ts'), '', 'with getPlant it compiles')
  t.match(
    errors('rounded.ts'),
    /rounded\.ts\(\d+,11\): error TS2322: Type 'bigint' is not assignable to type 'number'/,
    'a parameter read as another type than the document says fails (an int64 as a number)',
  )
  t.notMatch(output, /openapi\.ts\(/, 'the generated types compile')
})
