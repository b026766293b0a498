/**
 * The contract drift gate (api/compat.ts, `npm run check:compat`): each kind of
 * breaking edit to a copy of the released contract is reported, and openapi.yaml and
 * non-breaking edits pass.
 *
 * @module
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { breakingChanges, latestReleased, main, readContract } from '../../api/compat.js'

const releasedPath = latestReleased(join(import.meta.dirname, '../../api/released'))
/* eslint-disable @typescript-eslint/no-explicit-any -- edits reach into a parsed YAML document */
type Doc = any
const released = readContract(releasedPath)

/** A fresh copy of the released contract with `edit` applied. */
function edited(edit: (doc: Doc) => void): Doc {
  const doc = structuredClone(released) as Doc
  edit(doc)
  return doc
}
const post = (doc: Doc) => doc.paths['/plants'].post
const plant = (doc: Doc) => doc.components.schemas.Plant
const newPlantOwn = (doc: Doc) => doc.components.schemas.NewPlant.allOf[1]

const breaking: Record<string, [(doc: Doc) => void, RegExp]> = {
  'removed operation': [(doc) => delete doc.paths['/plants'].post, /POST \/plants: operation removed/],
  'renamed path': [(doc) => { doc.paths['/flowers'] = doc.paths['/plants']; delete doc.paths['/plants'] }, /POST \/plants: operation removed/],
  'renamed operationId': [(doc) => { post(doc).operationId = 'addPlant' }, /operationId createPlant renamed to addPlant/],
  'removed request and response field': [(doc) => delete plant(doc).properties.tag, /request application\/json\.tag: field removed/],
  'removed response field': [(doc) => delete doc.components.schemas.Error.properties.message, /409 response application\/json\.message: field removed/],
  'response field no longer required': [(doc) => { doc.components.schemas.Error.required = ['error'] }, /message: no longer required/],
  'new required field': [(doc) => { newPlantOwn(doc).properties.colour = { type: 'string' }; newPlantOwn(doc).required.push('colour') }, /\.colour: new required field/],
  'narrowed type': [(doc) => { plant(doc).properties.tag.type = 'integer' }, /request application\/json\.tag: type narrowed \("string" -> "integer"\)/],
  'narrowed format': [(doc) => { newPlantOwn(doc).properties.id.format = 'int32' }, /\.id: format narrowed \("int64" -> "int32"\)/],
  'narrowed pattern': [(doc) => { plant(doc).properties.name.pattern = '^[a-z]*$' }, /request application\/json\.name: pattern narrowed/],
  'added bound': [(doc) => { plant(doc).properties.name.maxLength = 10 }, /\.name: maxLength narrowed \(undefined -> 10\)/],
  'added enum': [(doc) => { plant(doc).properties.tag.enum = ['indoor'] }, /request application\/json\.tag: enum narrowed/],
  'removed status': [(doc) => delete post(doc).responses['409'], /POST \/plants 409: response status removed/],
  'removed response header': [(doc) => delete doc.components.responses.TooManyRequests.headers, /429: header Retry-After removed/],
  'removed request media type': [(doc) => { post(doc).requestBody.content = { 'application/merge-patch+json': post(doc).requestBody.content['application/json'] } }, /request: media type application\/json removed/],
}

for (const [name, [edit, expected]] of Object.entries(breaking)) {
  t.test(`flagged: ${name}`, async (t) => {
    const found = breakingChanges(released, edited(edit))
    t.match(found.join('\n'), expected, found.join('\n'))
  })
}

t.test('flagged in responses: widened type, changed format, looser bound, more enum values, a longer array of fewer promises', async (t) => {
  const older = edited((doc) => {
    plant(doc).properties.tag.enum = ['indoor', 'outdoor']
    plant(doc).properties.tag.maxLength = 20
    plant(doc).properties.kinds = { type: 'array', items: { type: 'string', format: 'email' } }
  })
  const newer = structuredClone(older)
  newer.components.schemas.Plant.properties.tag.enum.push('greenhouse')
  newer.components.schemas.Plant.properties.tag.maxLength = 40
  newer.components.schemas.Plant.properties.name.type = ['string', 'null']
  delete newer.components.schemas.Plant.properties.kinds.items.format
  const found = breakingChanges(older, newer).filter((line) => line.includes(' 200 response '))
  t.match(found.join('\n'), /\.tag: enum widened/)
  t.match(found.join('\n'), /\.tag: maxLength widened \(20 -> 40\)/)
  t.match(found.join('\n'), /\.name: type widened/)
  t.match(found.join('\n'), /\.kinds\[\]: format widened \("email" -> undefined\)/)
})

t.test('flagged: a tighter bound in a request', async (t) => {
  const older = edited((doc) => { plant(doc).properties.name.minLength = 1 })
  const newer = edited((doc) => { plant(doc).properties.name.minLength = 2 })
  t.match(breakingChanges(older, newer).join('\n'), /request application\/json\.name: minLength narrowed \(1 -> 2\)/)
  t.same(breakingChanges(older, older), [])
})

t.test('flagged: a request body that was optional and is now required; a request schema that lost its type', async (t) => {
  const older = edited((doc) => { post(doc).requestBody.required = false })
  const newer = edited((doc) => { delete newPlantOwn(doc).properties.id.type })
  t.match(breakingChanges(older, released), ['POST /plants request body: now required'])
  t.same(breakingChanges(released, newer), [], 'no type accepts every type: not narrowed')
  t.match(breakingChanges(newer, released).join('\n'), /\.id: type narrowed \(undefined -> "integer"\)/)
})

t.test('passes: the current openapi.yaml', async (t) => {
  t.same(breakingChanges(released, readContract(join(import.meta.dirname, '../../openapi.yaml'))), [])
})

t.test('passes: non-breaking edits', async (t) => {
  const newer = edited((doc) => {
    plant(doc).properties.colour = { type: 'string' }
    newPlantOwn(doc).properties.id.type = 'number'
    post(doc).responses['403'] = { description: 'Forbidden', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }
    doc.paths['/plants'].get = { operationId: 'listPlants', responses: { '200': { description: 'The plants' } } }
    doc.components.headers['Retry-After'].schema.minimum = -1
  })
  t.same(breakingChanges(released, newer), [], 'new optional field, wider request type, new status, new operation')
})

t.test('recursive schemas are compared once', async (t) => {
  const recursive = (doc: Doc) => { plant(doc).properties.children = { type: 'array', items: { $ref: '#/components/schemas/Plant' } } }
  t.same(breakingChanges(edited(recursive), edited(recursive)), [])
  t.same(breakingChanges({}, {}), [])
})

t.test('the command line: exit status 0 for openapi.yaml, 1 and the list for a breaking copy; no released contract is an error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'contract-drift-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const lines: string[] = []
  t.equal(main([], (line) => lines.push(line)), 0)
  t.match(lines, [/openapi\.yaml is backward compatible with .*openapi-1\.0\.0\.yaml$/])

  const broken = join(dir, 'openapi.yaml')
  writeFileSync(broken, JSON.stringify(edited((doc) => delete post(doc).responses['409'])))
  lines.length = 0
  t.equal(main([releasedPath, broken], (line) => lines.push(line)), 1)
  t.match(lines, [/breaks/, '  POST /plants 409: response status removed'])

  writeFileSync(join(dir, 'openapi-latest.yaml'), '{}')
  t.throws(() => latestReleased(dir), /No released contract/)
  writeFileSync(join(dir, 'openapi-1.10.0.yaml'), '{}')
  writeFileSync(join(dir, 'openapi-1.9.0.yaml'), '{}')
  t.equal(latestReleased(dir), join(dir, 'openapi-1.10.0.yaml'), 'by semantic version, not by name')
})
