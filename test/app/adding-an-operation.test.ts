/**
 * docs/adding-an-operation.md, followed as written. Every code block the page places in
 * a file (its info string: ```<language> <file> [end of <place>]```) is added to a copy of
 * the project, which then gets what the page says to run: the generator, Redocly, the
 * compatibility check and a type check. The page's own test of the new operation runs
 * in the copy, and so do the checks of what the page says follows by itself. The
 * project's own files are not touched.
 *
 * The copy is outside the project, so the coverage of the project's code counts none
 * of it.
 *
 * @module
 */
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import { parse } from 'yaml'
import type * as AppHelpers from '../helpers/app.ts'
import { GATEWAY_PREFIX, NGINX_DIR } from '../helpers/nginx.ts'
import type * as PostHelpers from '../helpers/post-plant.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PAGE = 'docs/adding-an-operation.md'
/** What the project's copy holds besides node_modules: what the generator, the checks, the service and its test helpers need. */
const COPIED = ['openapi.yaml', 'package.json', 'tsconfig.json', 'redocly.yaml', 'api', 'service', 'test/helpers']

/** A code block of the page that goes in a file: a new one, or at the end of `place` (`class <Name>`, or a top-level key of a YAML file). */
interface Block {
  readonly file: string
  readonly place: string | undefined
  readonly text: string
}

/** The blocks of `markdown` whose info string names a file. */
function placedBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```\w+ (\S+)(?: end of (.+))?\n([\s\S]*?)^```$/gm)].map(([, file, place, text]) => ({
    file: file!,
    place,
    text: text!,
  }))
}

/**
 * `text` with `block` added where the page says: before the line `}` that ends
 * `class <Name>`, or before the next top-level key after the YAML key `<place>:`.
 * @throws when `text` has no such place.
 */
function placed(text: string, block: Block): string {
  const lines = text.split('\n')
  const name = /^class (\w+)$/.exec(block.place!)?.[1]
  const start = lines.findIndex((line) =>
    name === undefined ? line === `${block.place}:` : new RegExp(`^export class ${name}\\b`).test(line),
  )
  const end = lines.findIndex((line, i) => i > start && (name === undefined ? /^[^\s#]/.test(line) : line === '}'))
  if (start < 0 || (end < 0 && name !== undefined)) throw new Error(`${PAGE}: ${block.file} has no ${block.place}`)
  const at = end >= 0 ? end : lines.length - (lines.at(-1) === '' ? 1 : 0)
  lines.splice(at, 0, ...(name === undefined ? [] : ['']), ...block.text.replace(/\n$/, '').split('\n'))
  return lines.join('\n')
}

/** Runs `node <args>` in `cwd`, without tap's loaders, and resolves to its exit code and output. */
function node(cwd: string, args: string[]): Promise<{ code: number; output: string; seconds: number }> {
  const started = performance.now()
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd, env: { ...process.env, NODE_OPTIONS: '' }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
        resolve({ code, output: `${stdout}${stderr}`, seconds: Math.round((performance.now() - started) / 100) / 10 })
      },
    )
  })
}

/** The value nginx's `map … <variable> { … }` in `conf` gives a key: an exact string first, then the first regular expression that matches, else the default. */
function nginxMap(conf: string, variable: string): (key: string) => string {
  const body = new RegExp(`\\n\\s*map \\S+ \\${variable} \\{([^}]*)\\}`).exec(conf)?.[1]
  if (body === undefined) throw new Error(`no map of ${variable}`)
  const unquoted = (word: string) => (word.startsWith('"') ? word.slice(1, -1) : word)
  const entries = [...body.matchAll(/^\s*("[^"]*"|[^\s#]\S*)\s+("[^"]*"|\S+);/gm)].map(
    ([, key, value]) => [unquoted(key!), unquoted(value!)] as const,
  )
  const exact = new Map(entries.filter(([key]) => !key.startsWith('~')))
  const patterns = entries
    .filter(([key]) => key.startsWith('~'))
    .map(([key, value]) => [new RegExp(key.replace(/^~\*?/, ''), key.startsWith('~*') ? 'i' : ''), value] as const)
  return (key) => exact.get(key) ?? patterns.find(([pattern]) => pattern.test(key))?.[1] ?? exact.get('default') ?? ''
}

const blocks = placedBlocks(readFileSync(join(ROOT, PAGE), 'utf8'))

// The copy, with every block in place and the types generated from its contract (npm run generate).
const copy = mkdtempSync(join(tmpdir(), 'plant-store-adding-an-operation-'))
t.teardown(() => rmSync(copy, { recursive: true, force: true }))
for (const path of COPIED) cpSync(join(ROOT, path), join(copy, path), { recursive: true })
symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'))
for (const block of blocks) {
  const path = join(copy, block.file)
  if (block.place === undefined && existsSync(path))
    throw new Error(`${PAGE}: ${block.file} is placed as a new file, but the project has one`)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, block.place === undefined ? block.text : placed(readFileSync(path, 'utf8'), block))
}
const generated = await node(copy, ['api/generate-types.ts'])
if (generated.code !== 0) throw new Error(`npm run generate failed in the copy:\n${generated.output}`)

// The checks the page names run beside the tests below; a type check of the service and the new test.
const tests = blocks.filter((block) => block.file.startsWith('test/')).map((block) => block.file)
writeFileSync(
  join(copy, 'tsconfig.check.json'),
  JSON.stringify({ extends: './tsconfig.json', compilerOptions: { noEmit: true }, include: ['service', ...tests] }),
)
const typecheck = node(copy, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.check.json'])
const contractLint = node(copy, [join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', 'openapi.yaml'])
const compat = node(copy, ['api/check.ts'])

t.test('the page writes the three files it names and a test of the operation, nothing else', async (t) => {
  t.strictSame(blocks.map((block) => block.file).sort(), [
    'openapi.yaml',
    'service/operations/plant-service.ts',
    'service/store/plant-repository.ts',
    'test/app/get-plant.test.ts',
  ])
  t.match(
    readFileSync(join(copy, 'service/generated/openapi.ts'), 'utf8'),
    /\n {4}getPlant: \{/,
    'npm run generate: operations.getPlant',
  )
})

t.test("npm run lint:contract (Redocly's recommended rules) passes on the copy's contract", async (t) => {
  const { code, output } = await contractLint
  t.equal(code, 0, output)
})

t.test('npm run check:compat: the added operation breaks no client', async (t) => {
  const { code, output } = await compat
  t.equal(code, 0, output)
})

// The page's test of the operation, run as written on the copy (its subtests follow).
for (const test of tests) await import(pathToFileURL(join(copy, test)).href)

const { build, TOKEN } = (await import(pathToFileURL(join(copy, 'test/helpers/app.ts')).href)) as typeof AppHelpers
const { postPlant } = (await import(pathToFileURL(join(copy, 'test/helpers/post-plant.ts')).href)) as typeof PostHelpers
const AUTHORIZED = { authorization: `Bearer ${TOKEN}` }

t.test('what follows by itself: 405 with Allow, CORS, the served document; createPlant as before', async (t) => {
  const app = await build(t, { corsOrigins: ['https://ui.example'] })
  const deleted = await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTHORIZED })
  t.strictSame([deleted.statusCode, deleted.headers.allow, deleted.json().error], [405, 'GET, HEAD', 405])
  t.equal(
    (await app.inject({ url: '/plants', headers: AUTHORIZED })).headers.allow,
    'POST',
    '/plants itself is unchanged',
  )
  const created = await postPlant(app, { id: 1, name: 'Monstera deliciosa', tag: 'indoor' }, { t })
  t.strictSame([created.statusCode, created.json()], [200, { name: 'Monstera deliciosa', tag: 'indoor' }])
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/plants/1',
    headers: { origin: 'https://ui.example', 'access-control-request-method': 'GET' },
  })
  t.strictSame([preflight.statusCode, preflight.headers['access-control-allow-methods']], [204, 'GET, POST'])
  const document = (await app.inject({ url: '/docs/json' })).json() as {
    paths: Record<string, Record<string, { operationId?: string }>>
  }
  t.equal(document.paths['/plants/{id}']?.get?.operationId, 'getPlant')
  t.equal(document.paths['/plants']?.post?.operationId, 'createPlant')
})

t.test(
  "the gateway's own 405 (TRACE, which nginx refuses) says what the service allows on each path of the contract",
  async (t) => {
    const allow = nginxMap(readFileSync(join(NGINX_DIR, 'nginx.conf'), 'utf8'), '$plant_store_allow')
    const app = await build(t)
    const { paths } = parse(readFileSync(join(copy, 'openapi.yaml'), 'utf8')) as { paths: Record<string, unknown> }
    t.ok(paths['/plants/{id}'])
    for (const path of Object.keys(paths)) {
      const url = path.replace(/\{\w+\}/g, '1')
      const service = await app.inject({ method: 'TRACE', url })
      t.equal(service.statusCode, 405)
      t.equal(allow(`:405:${GATEWAY_PREFIX}${url}`), service.headers.allow, `${path}: ${service.headers.allow}`)
    }
  },
)

t.test(
  'the copy type-checks (npm run typecheck): PlantService has getPlant, typed by the generated operations',
  async (t) => {
    const { code, output, seconds } = await typecheck
    t.equal(code, 0, output)
    t.comment(`tsc took ${seconds} s`)
  },
)
