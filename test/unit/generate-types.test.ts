/** api/types.ts `main`: writes what `generateTypes` gives; `--check` fails on a stale file, naming it. */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { generateTypes, main } from '../../api/types.ts'

const contract = new URL('../../openapi.yaml', import.meta.url)

t.test('writes the types of the contract; --check passes on them and fails on a stale file, naming it', async (t) => {
  const output = join(t.testdir(), 'openapi.ts')
  const lines: string[] = []
  const check = () => main(['--check', fileURLToPath(contract), output], (line) => lines.push(line))
  t.equal(await main([fileURLToPath(contract), output]), 0)
  const written = readFileSync(output, 'utf8')
  t.equal(written, await generateTypes(contract))
  t.match(written, /id: bigint;/, 'an int64 is a bigint')
  t.equal(await check(), 0)
  writeFileSync(output, written.replace('id: bigint;', 'id: number;'))
  t.equal(await check(), 1)
  t.strictSame(lines, [`${output} is stale: run npm run generate`])
})
