/** `POST /plants` against NewPlant: no coercion, required fields, an object; each 400 names the field. */
import t from 'tap'
import { build } from '../helpers/app.ts'
import { postPlant } from '../helpers/post-plant.ts'

// A rejected body stores nothing.
const app = await build(t)

const rejected: Array<[string, string, RegExp]> = [
  ['an id sent as a string is 400, not coerced', '{"id":"12","name":"Fern"}', /^body\/id must be integer$/],
  ['an id sent as a boolean is 400, not coerced', '{"id":true,"name":"Fern"}', /^body\/id must be integer$/],
  ['an id sent as null is 400', '{"id":null,"name":"Fern"}', /^body\/id must be integer$/],
  ['a name sent as a number is 400, not coerced', '{"id":1,"name":12}', /^body\/name must be string$/],
  ['a name sent as null is 400', '{"id":1,"name":null}', /^body\/name must be string$/],
  ['a tag sent as null is 400', '{"id":1,"name":"Fern","tag":null}', /^body\/tag must be string$/],
  ['a tag sent as a number is 400, not coerced', '{"id":1,"name":"Fern","tag":5}', /^body\/tag must be string$/],
  ['a missing id is 400 naming id', '{"name":"Fern"}', /required property 'id'/],
  ['a missing name is 400 naming name', '{"id":1}', /required property 'name'/],
  ...[
    ['an array', '[{"id":1,"name":"Fern"}]'],
    ['a string', '"Fern"'],
    ['a number', '1'],
    ['null', 'null'],
  ].map(([kind, json]): [string, string, RegExp] => [`a body that is ${kind} is 400`, json!, /^body must be object$/]),
]
t.test('a body that is not a NewPlant is 400 naming the field', async (t) => {
  for (const [what, json, field] of rejected)
    t.match((await postPlant(app, json, { t })).json(), { error: 400, message: field }, what)
})
