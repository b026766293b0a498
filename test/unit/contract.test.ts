/** service/contract.ts: integers as numbers for glue, exact bigints for the docs; not YAML refused; the methods. */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { loadContract, loadContractReadings, operationMethods } from '../../service/contract.ts'
import { fixtureContract } from '../fixtures/plant-contract.ts'

t.test('integers are JS numbers in the document and bigints as written in the exact reading', async (t) => {
  const dir = t.testdir({ 'openapi.yaml': 'id: 9007199254740993\nratio: 1.5\nname: x\n' })
  const { document, exact } = loadContractReadings(pathToFileURL(join(dir, 'openapi.yaml')))
  t.strictSame(document, { id: 9007199254740992, ratio: 1.5, name: 'x' })
  t.strictSame(exact, { id: 9007199254740993n, ratio: 1.5, name: 'x' })
})

t.test('a file that is not YAML is refused with the parser’s error', async (t) => {
  const dir = t.testdir({ 'openapi.yaml': 'paths: [\n' })
  t.throws(() => loadContract(pathToFileURL(join(dir, 'openapi.yaml'))), { name: 'YAMLParseError' })
})

t.test("operationMethods lists each method of the contract's operations once", async (t) => {
  const contract = fixtureContract()
  t.strictSame(operationMethods(contract), ['GET', 'POST'])
  contract.paths['/plants/{id}'] = {
    ...contract.paths['/plants/{id}'],
    summary: 'one plant',
    parameters: [],
    delete: { operationId: 'deletePlant', responses: {} },
  }
  contract.paths['/other'] = { post: { operationId: 'other', responses: {} } }
  t.strictSame(operationMethods(contract), ['DELETE', 'GET', 'POST'])
})
