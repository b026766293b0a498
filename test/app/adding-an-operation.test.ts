/**
 * docs/adding-an-operation.md followed on a copy of the project: its blocks (```<language> <file> [end of <place>]```)
 * put in, then `npm run generate`, Redocly, `npm run test:checks`, tsc and the page's test.
 */
import { execFile } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t, { type Test } from 'tap'
import { parse, parseDocument } from 'yaml'
import type * as AppHelpers from '../helpers/app.ts'
import { NGINX_DIR } from '../helpers/nginx.ts'
import type * as PostHelpers from '../helpers/post-plant.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PAGE = 'docs/adding-an-operation.md'
/** Not copied: installed, built or written by runs. */
const NOT_COPIED = new Set(['node_modules', '.git', '.tap', 'dist', 'artifacts', 'coverage', 'tsconfig.check.json'])

/** The blocks of `markdown` that go in a file: a new one, or at the end of `place` (`class <Name>`, or `paths`). */
function placedBlocks(markdown: string) {
  return [...markdown.matchAll(/^```\w+ (\S+)(?: end of (.+))?\n([\s\S]*?)\n^```$/gm)].map(([, file, place, text]) => ({
    file: file!,
    place,
    text: text!,
  }))
}
type Block = ReturnType<typeof placedBlocks>[number]

/** The paths listed under "The files that change". */
function listedFiles(markdown: string) {
  const section = /^## The files that change\n([\s\S]*?)^## /m.exec(markdown)?.[1] ?? ''
  return [...section.matchAll(/^- `([^`]+)`/gm)].map(([, path]) => path!)
}

/** `text` with `block` at the end of `paths`, or merged into a path it has; unchanged when all are there. */
function placedInPaths(text: string, block: Block) {
  const added = parse(block.text) as Record<string, Record<string, unknown>>
  const document = parseDocument(text)
  const missing = Object.entries(added).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => !document.hasIn(['paths', path, method]))
      .map(([method, operation]) => ({ path, method, operation })),
  )
  if (missing.length === 0) return text
  if (missing.every(({ path }) => !document.hasIn(['paths', path]))) {
    const lines = text.split('\n')
    const start = lines.indexOf('paths:')
    const end = lines.findIndex((line, i) => i > start && /^[^\s#]/.test(line))
    if (start < 0) throw new Error('it has no top-level paths')
    lines.splice(end < 0 ? lines.length : end, 0, ...block.text.split('\n'))
    return lines.join('\n')
  }
  for (const { path, method, operation } of missing) document.setIn(['paths', path, method], operation)
  return String(document)
}

/** `text` with `block` at the end of `export class <Name>`, unless the class has its member. */
function placedInClass(text: string, block: Block, name: string) {
  const lines = text.split('\n')
  const start = lines.findIndex((line) => new RegExp(`^export class ${name}\\b`).test(line))
  const end = lines.findIndex((line, i) => i > start && line === '}')
  if (start < 0 || end < 0) throw new Error(`it has no class ${name}`)
  const member = /^ {2}(?:async )?(\w+)\(/m.exec(block.text)?.[1]
  if (member === undefined) throw new Error('the block declares no method')
  if (lines.slice(start, end).some((line) => new RegExp(`^ {2}(?:async )?${member}\\(`).test(line))) return text
  lines.splice(end, 0, '', ...block.text.split('\n'))
  return lines.join('\n')
}

/** Puts `block` in the copy where the page says. @returns false if the project had it. */
function place(copy: string, block: Block) {
  const path = join(copy, block.file)
  try {
    if (block.place === undefined) {
      if (existsSync(path)) return false
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(path, `${block.text}\n`)
      return true
    }
    const text = readFileSync(path, 'utf8')
    const name = /^class (\w+)$/.exec(block.place)?.[1]
    if (name === undefined && block.place !== 'paths') throw new Error(`the page names an unknown place`)
    const placed = name === undefined ? placedInPaths(text, block) : placedInClass(text, block, name)
    writeFileSync(path, placed)
    return placed !== text
  } catch (error) {
    const where = block.place === undefined ? 'as a new file' : `at the end of ${block.place}`
    throw new Error(`${PAGE}: its block for ${block.file} cannot go ${where}`, { cause: error })
  }
}

/** Runs `command <args>` in the copy, without tap's loaders: its exit code and output. */
function run(command: string, ...args: string[]): Promise<{ code: number; output: string }> {
  const options = { cwd: copy, env: { ...process.env, NODE_OPTIONS: '' }, maxBuffer: 64 * 1024 * 1024 }
  return new Promise((resolve) => {
    execFile(command, args, options, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: stdout + stderr })
    })
  })
}

/** The files under `dir` (relative paths) that the copy takes. */
function files(dir: string, under = ''): string[] {
  return readdirSync(join(dir, under), { withFileTypes: true })
    .filter((entry) => !NOT_COPIED.has(entry.name))
    .flatMap((entry) =>
      entry.isDirectory() ? files(dir, join(under, entry.name)) : entry.isFile() ? [join(under, entry.name)] : [],
    )
}

const page = readFileSync(join(ROOT, PAGE), 'utf8')
const blocks = placedBlocks(page)
const listed = listedFiles(page)

const copy = mkdtempSync(join(tmpdir(), 'plant-store-adding-an-operation-'))
t.teardown(() => rmSync(copy, { recursive: true, force: true }))
for (const entry of readdirSync(ROOT).filter((name) => !NOT_COPIED.has(name)))
  cpSync(join(ROOT, entry), join(copy, entry), { recursive: true })
symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'))
const before = new Map(files(copy).map((file) => [file, readFileSync(join(copy, file))]))
const placed = blocks.filter((block) => place(copy, block))
const generated = await run('npm', 'run', '--silent', 'generate')
if (generated.code !== 0) throw new Error(`npm run generate failed, ${PAGE} applied:\n${generated.output}`)

// The checks the page names, one at a time (together they starved two cores).
const tests = blocks.filter((block) => block.file.startsWith('test/')).map((block) => block.file)
writeFileSync(
  join(copy, 'tsconfig.check.json'),
  JSON.stringify({
    extends: './tsconfig.json',
    compilerOptions: { noEmit: true },
    include: ['service', ...tests],
    exclude: ['service/**/*.test.ts', 'service/**/test/**'],
  }),
)
/** Passes if `command <args>` exits 0 in the copy. */
const passes = async (t: Test, command: string, ...args: string[]) => {
  const { code, output } = await run(command, ...args)
  t.equal(code, 0, output)
}

t.test('the page writes the files it names and a test; only its list of files changes', async (t) => {
  t.strictSame(blocks.map((block) => block.file).sort(), [
    'openapi.yaml',
    'service/operations/plant-service.ts',
    'service/store/plant-repository.ts',
    'test/app/get-plant.test.ts',
  ])
  const generated = readFileSync(join(copy, 'service/generated/openapi.ts'), 'utf8')
  t.match(generated, /\n {4}getPlant: \{/, 'npm run generate: operations.getPlant')
  const changed = files(copy).filter((file) => !before.get(file)?.equals(readFileSync(join(copy, file))))
  t.strictSame(
    changed.filter((file) => !listed.includes(file)),
    [],
    `no file outside the page's list changes`,
  )
  if (placed.length === blocks.length) t.strictSame(changed.sort(), [...listed].sort(), 'every file listed changes')
  else t.comment(`the project has ${blocks.length - placed.length} of the page's blocks already`)
})

t.test("npm run lint:contract (Redocly's recommended rules) passes on the copy's contract", (t) =>
  passes(t, process.execPath, join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', 'openapi.yaml'),
)

t.test('ESLint passes on the TypeScript files the page changes, TSDoc included', (t) => {
  const sources = listed.filter((file) => file.endsWith('.ts') && !file.startsWith('service/generated/'))
  return passes(t, process.execPath, join(ROOT, 'node_modules/eslint/bin/eslint.js'), ...sources)
})

t.test('npm run test:checks passes on the copy: generated files fresh, no client broken', (t) =>
  passes(t, 'npm', 'run', '--silent', 'test:checks'),
)

// The page's test of the operation, run on the copy (its subtests follow).
for (const test of tests) await import(pathToFileURL(join(copy, test)).href)

const { build, TOKEN } = (await import(pathToFileURL(join(copy, 'test/helpers/app.ts')).href)) as typeof AppHelpers
const { postPlant } = (await import(pathToFileURL(join(copy, 'test/helpers/post-plant.ts')).href)) as typeof PostHelpers
const AUTHORIZED = { authorization: `Bearer ${TOKEN}` }

t.test('what follows by itself: 405 with Allow, CORS, the served document; createPlant as before', async (t) => {
  const plain = await build(t)
  const deleted = await plain.inject({ method: 'DELETE', url: '/plants/1', headers: AUTHORIZED })
  t.strictSame([deleted.statusCode, deleted.headers.allow, deleted.json().error], [405, 'GET, HEAD', 405])
  const plants = await plain.inject({ url: '/plants', headers: AUTHORIZED })
  t.equal(plants.headers.allow, 'POST', '/plants itself is unchanged')
  const app = await build(t, { corsOrigins: ['https://ui.example'] })
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

t.test('the gateway names no method: nginx passes every one on to the service', async (t) => {
  for (const file of readdirSync(NGINX_DIR).filter((name) => name.endsWith('.conf'))) {
    const directives = readFileSync(join(NGINX_DIR, file), 'utf8').replace(/#.*$/gm, '')
    t.notMatch(directives, /\b(limit_except|GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)\b/, `${file}: no method named`)
  }
})

t.test("the page's gateway retries are nginx.conf's: the directive and its limits", async (t) => {
  const conf = readFileSync(join(NGINX_DIR, 'nginx.conf'), 'utf8')
  const quoted = page.match(/`(proxy_next_upstream [\w ]+)`/)?.[1]
  t.ok(quoted !== undefined && conf.includes(`${quoted};`), `nginx.conf has ${quoted}`)
  const [, tries, seconds] = page.match(/at most (\d+) tries\s+within (\d+) s/) ?? []
  t.match(conf, new RegExp(`proxy_next_upstream_tries ${tries};\\s+proxy_next_upstream_timeout ${seconds}s;`))
})

t.test('the copy type-checks: PlantService has getPlant, typed by the generated operations', (t) =>
  passes(t, process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.check.json'),
)
