/**
 * The type generator (api/types.ts) as a command: it writes the module
 * `generateTypes` gives, and with `--check` fails on a stale file, naming it.
 *
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import { generateTypes } from '../../api/types.js'
import { CommandError, run } from '../helpers/command.js'

const script = fileURLToPath(new URL('../../api/types.ts', import.meta.url))
const contract = fileURLToPath(new URL('../../openapi.yaml', import.meta.url))

t.test('writes the types of the contract; --check passes on them and fails on a stale file', async (t) => {
  const output = join(t.testdir(), 'openapi.ts')
  await run(process.execPath, [script, contract, output])
  const written = readFileSync(output, 'utf8')
  t.equal(written, await generateTypes(pathToFileURL(contract)))
  t.match(written, /id: bigint;/, 'an int64 is a bigint')
  await t.resolves(run(process.execPath, [script, '--check', contract, output]))
  writeFileSync(output, written.replace('id: bigint;', 'id: number;'))
  const stale = await run(process.execPath, [script, '--check', contract, output]).catch((error: unknown) => error)
  t.ok(stale instanceof CommandError, 'exits non-zero')
  t.match((stale as CommandError).stderr, `${output} is stale: run npm run generate`)
})

t.test('the committed types are fresh', async (t) => {
  const committed = readFileSync(new URL('../../service/generated/openapi.ts', import.meta.url), 'utf8')
  t.equal(committed, await generateTypes(new URL('../../openapi.yaml', import.meta.url)))
})
