/** The contract drift gate (api/compat.ts): each kind of breaking edit of the released contract is reported. */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { breakingChanges, latestReleased, main, readContract } from '../../api/compat.ts'

const releasedPath = latestReleased(join(import.meta.dirname, '../../api/released'))
/* eslint-disable @typescript-eslint/no-explicit-any -- edits reach into a parsed YAML document */
type Doc = any
const released = readContract(releasedPath)

/** A fresh copy of the released contract with `edit` applied. */
function edited(edit: (doc: Doc) => unknown): Doc {
  const doc = structuredClone(released) as Doc
  edit(doc)
  return doc
}
const post = (doc: Doc) => doc.paths['/plants'].post
const plant = (doc: Doc) => doc.components.schemas.Plant.properties
const own = (doc: Doc) => doc.components.schemas.NewPlant.allOf[1]

t.test('each kind of breaking edit is flagged', async (t) => {
  const breaking: Array<[(doc: Doc) => unknown, RegExp]> = [
    [(doc) => delete doc.paths['/plants'].post, /POST \/plants: operation removed/],
    [(doc) => (doc.paths = { '/flowers': doc.paths['/plants'] }), /POST \/plants: operation removed/],
    [(doc) => (post(doc).operationId = 'addPlant'), /operationId createPlant renamed to addPlant/],
    [(doc) => delete plant(doc).tag, /request application\/json\.tag: field removed/],
    [
      (doc) => delete doc.components.schemas.Error.properties.message,
      /409 response application\/json\.message: field /,
    ],
    [(doc) => (doc.components.schemas.Error.required = ['error']), /message: no longer required/],
    [(doc) => own(doc).required.push('colour') && (own(doc).properties.colour = {}), /\.colour: new required field/],
    [(doc) => (plant(doc).tag.type = 'integer'), /request application\/json\.tag: type narrowed \("string" -> "in/],
    [(doc) => (own(doc).properties.id.format = 'int32'), /\.id: format narrowed \("int64" -> "int32"\)/],
    [(doc) => (plant(doc).name.pattern = '^[a-z]*$'), /request application\/json\.name: pattern narrowed/],
    [(doc) => (plant(doc).name.maxLength = 10), /\.name: maxLength narrowed \(undefined -> 10\)/],
    [(doc) => (plant(doc).tag.enum = ['indoor']), /request application\/json\.tag: enum narrowed/],
    [(doc) => delete post(doc).responses['409'], /POST \/plants 409: response status removed/],
    [(doc) => delete doc.components.responses.TooManyRequests.headers, /429: header Retry-After removed/],
    [
      ({ paths }) => (paths['/plants'].post.requestBody.content = { 'application/merge-patch+json': {} }),
      /request: media type application\/json removed/,
    ],
  ]
  for (const [edit, expected] of breaking)
    t.match(breakingChanges(released, edited(edit)).join('\n'), expected, String(expected))
})

t.test(
  'flagged between edited copies: in responses wider types, formats, bounds, enums; in requests tighter ones, a body',
  async (t) => {
    const older = edited((doc) =>
      Object.assign(plant(doc), {
        tag: { ...plant(doc).tag, enum: ['indoor', 'outdoor'], maxLength: 20 },
        kinds: { type: 'array', items: { type: 'string', format: 'email' } },
      }),
    )
    const newer = structuredClone(older)
    Object.assign(plant(newer).tag, { enum: ['indoor', 'outdoor', 'greenhouse'], maxLength: 40 })
    plant(newer).name.type = ['string', 'null']
    delete plant(newer).kinds.items.format
    const found = breakingChanges(older, newer).join('\n')
    for (const expected of [
      /200 response application\/json\.tag: enum widened/,
      /200 response application\/json\.tag: maxLength widened \(20 -> 40\)/,
      /200 response application\/json\.name: type widened/,
      /200 response application\/json\.kinds\[\]: format widened \("email" -> undefined\)/,
    ])
      t.match(found, expected)
    const minLength = (length: number) => edited((doc) => (plant(doc).name.minLength = length))
    t.match(
      breakingChanges(minLength(1), minLength(2)).join('\n'),
      /request application\/json\.name: minLength narrowed \(1 -> 2\)/,
    )
    const optionalBody = edited((doc) => (post(doc).requestBody.required = false))
    t.match(breakingChanges(optionalBody, released), ['POST /plants request body: now required'])
    const untyped = edited((doc) => delete own(doc).properties.id.type)
    t.same(breakingChanges(released, untyped), [], 'no type accepts every type: not narrowed')
    t.match(breakingChanges(untyped, released).join('\n'), /\.id: type narrowed \(undefined -> "integer"\)/)
  },
)

t.test('passes: the current openapi.yaml, non-breaking edits, recursive schemas (compared once)', async (t) => {
  t.same(breakingChanges(released, readContract(join(import.meta.dirname, '../../openapi.yaml'))), [])
  const newer = edited((doc) => {
    plant(doc).colour = { type: 'string' }
    own(doc).properties.id.type = 'number'
    post(doc).responses['403'] = post(doc).responses['409'] // an Error body
    doc.paths['/plants'].get = { operationId: 'listPlants', responses: { '200': { description: 'The plants' } } }
    doc.components.headers['Retry-After'].schema.minimum = -1
  })
  t.same(breakingChanges(released, newer), [], 'new optional field, wider request type, new status, new operation')
  const recursive = () =>
    edited((doc) => (plant(doc).children = { type: 'array', items: { $ref: '#/components/schemas/Plant' } }))
  t.same(breakingChanges(recursive(), recursive()), [])
  t.same(breakingChanges({}, {}), [])
})

t.test(
  'the command line: 0 for openapi.yaml, 1 and the list for a breaking copy; no released contract is an error',
  async (t) => {
    const dir = t.testdir()
    const lines: string[] = []
    const log = (line: string) => void lines.push(line)
    t.equal(main([], log), 0)
    t.match(lines, [/openapi\.yaml is backward compatible with .*openapi-1\.0\.0\.yaml$/])
    const broken = join(dir, 'openapi.yaml')
    writeFileSync(broken, JSON.stringify(edited((doc) => delete post(doc).responses['409'])))
    lines.length = 0
    t.equal(main([releasedPath, broken], log), 1)
    t.match(lines, [/breaks/, '  POST /plants 409: response status removed'])
    writeFileSync(join(dir, 'openapi-latest.yaml'), '{}')
    t.throws(() => latestReleased(dir), /No released contract/)
    writeFileSync(join(dir, 'openapi-1.10.0.yaml'), '{}')
    writeFileSync(join(dir, 'openapi-1.9.0.yaml'), '{}')
    t.equal(latestReleased(dir), join(dir, 'openapi-1.10.0.yaml'), 'by semantic version, not by name')
  },
)
