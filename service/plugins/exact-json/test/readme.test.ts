/** README.md's example, run as it is written: its output is the line its last comment shows. @module */
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

t.test("the README's example prints the ids it shows, past 2^53 both ways", async (t) => {
  const [, code = ''] = /```ts\n([\s\S]*?)```/.exec(readme) ?? []
  const [, expected] = /\n\/\/ (\{.*\})\n/.exec(code) ?? []
  t.ok(expected?.includes('9007199254740993'), 'it shows an id past 2^53')
  const file = join(t.testdir(), 'example.ts')
  // The one change: its import of the plugin, from wherever the example runs.
  writeFileSync(file, code.replace("'./index.ts'", `'${pathToFileURL(join(import.meta.dirname, '..', 'index.ts'))}'`))
  const { stdout } = await promisify(execFile)(process.execPath, [file])
  t.equal(stdout, `${expected}\n`)
})
