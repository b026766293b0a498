/**
 * Contract tests of request validation of `POST /plants` against NewPlant: strict
 * types (no coercion), required fields, the body must be an object, extra members
 * ignored; every 400 names the field (openapi.yaml, responses.BadRequest).
 *
 * @module
 */
import t, { type Test } from 'tap'
import { build } from '../helpers/app.js'
import { postPlant } from '../helpers/post-plant.js'

/** Expects a 400 whose message names `body/<field>` (or the missing property). */
async function rejects(t: Test, json: string, field: RegExp) {
  const app = await build(t)
  const response = await postPlant(app, json, { t })
  t.equal(response.statusCode, 400, json)
  t.match(response.json(), { error: 400, message: field }, 'the message names the field')
}

t.test('an id sent as a string is 400, not coerced', (t) => rejects(t, '{"id":"12","name":"Fern"}', /^body\/id must be integer$/))

t.test('an id sent as a boolean is 400, not coerced', (t) => rejects(t, '{"id":true,"name":"Fern"}', /^body\/id must be integer$/))

t.test('an id sent as null is 400', (t) => rejects(t, '{"id":null,"name":"Fern"}', /^body\/id must be integer$/))

t.test('a name sent as a number is 400, not coerced', (t) => rejects(t, '{"id":1,"name":12}', /^body\/name must be string$/))

t.test('a name sent as null is 400', (t) => rejects(t, '{"id":1,"name":null}', /^body\/name must be string$/))

t.test('a tag sent as null is 400', (t) => rejects(t, '{"id":1,"name":"Fern","tag":null}', /^body\/tag must be string$/))

t.test('a tag sent as a number is 400, not coerced', (t) => rejects(t, '{"id":1,"name":"Fern","tag":5}', /^body\/tag must be string$/))

t.test('a missing id is 400 naming id', (t) => rejects(t, '{"name":"Fern"}', /required property 'id'/))

t.test('a missing name is 400 naming name', (t) => rejects(t, '{"id":1}', /required property 'name'/))

for (const [kind, json] of [
  ['an array', '[{"id":1,"name":"Fern"}]'],
  ['a string', '"Fern"'],
  ['a number', '1'],
  ['null', 'null'],
]) {
  t.test(`a body that is ${kind} is 400`, (t) => rejects(t, json!, /^body must be object$/))
}

t.test('extra members are accepted and ignored', async (t) => {
  const app = await build(t)
  const response = await postPlant(app, '{"id":1,"name":"Fern","tag":"shade","color":"green","id2":2}', { t })
  t.equal(response.statusCode, 200)
  t.strictSame(response.json(), { name: 'Fern', tag: 'shade' }, 'the Plant has no extra members')
  const replay = await postPlant(app, '{"id":1,"name":"Fern","tag":"shade"}', { t })
  t.equal(replay.statusCode, 200, 'the extras were not stored: the same plant without them is a replay')
})
