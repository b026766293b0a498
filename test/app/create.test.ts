/** `POST /plants`: replay, conflict (also concurrent) and exact int64 ids; rows read from the app's store. */
import { join } from 'node:path'
import { sql } from 'kysely'
import t from 'tap'
import { SQLITE_FILE } from '../../service/store/sqlite.ts'
import { build, freshStore, query, sqliteFile } from '../helpers/app.ts'
import { postPlant } from '../helpers/post-plant.ts'

interface Row {
  id: string
  name: string
  tag: string | null
}

// Each test uses ids of its own.
const store = await freshStore(t)
const app = await build(t, store)

/** The rows stored under `id` (a decimal string), the id read exactly. */
async function storedRows(id: string) {
  if (store.databaseUrl !== undefined)
    return query<Row>(store.databaseUrl, 'select id::text as id, name, tag from plant where id = $1::bigint', [id])
  const db = await sqliteFile(join(store.dataDir, SQLITE_FILE))
  const rows = sql<Row>`select cast(id as text) as id, name, tag from plant where id = ${BigInt(id)}`.execute(db)
  return (await rows.finally(() => db.destroy())).rows
}

t.test('the same id and content is a replay: 200 with the stored Plant, stored once', async (t) => {
  for (const body of [
    { id: 4, name: 'Pilea', tag: 'indoor' },
    { tag: 'indoor', name: 'Pilea', id: 4 },
    '{"id":4,"name":"Pilea","tag":"indoor"}',
  ]) {
    const response = await postPlant(app, body, { t })
    t.strictSame([response.statusCode, response.json()], [200, { name: 'Pilea', tag: 'indoor' }])
  }
  t.strictSame(await storedRows('4'), [{ id: '4', name: 'Pilea', tag: 'indoor' }])
})

t.test('the same id with other content is 409 naming the id; the stored plant is kept', async (t) => {
  const conflicts: Array<[string, { name: string; tag?: string }, { name: string; tag?: string }]> = [
    ['a different name', { name: 'Pilea', tag: 'indoor' }, { name: 'Peperomia', tag: 'indoor' }],
    ['a different tag', { name: 'Pilea', tag: 'indoor' }, { name: 'Pilea', tag: 'outdoor' }],
    ['a tag added', { name: 'Pilea' }, { name: 'Pilea', tag: 'indoor' }],
    ['a tag removed', { name: 'Pilea', tag: 'indoor' }, { name: 'Pilea' }],
  ]
  for (const [index, [difference, stored, sent]] of conflicts.entries()) {
    const id = 50 + index
    t.equal((await postPlant(app, { id, ...stored }, { t })).statusCode, 200)
    t.match(
      (await postPlant(app, { id, ...sent }, { t })).json(),
      { error: 409, message: new RegExp(`\\bid ${id}\\b`) },
      difference,
    )
    t.equal((await postPlant(app, { id, ...stored }, { t })).statusCode, 200, 'the first content still replays')
    t.strictSame(await storedRows(String(id)), [{ id: String(id), name: stored.name, tag: stored.tag ?? null }])
  }
})

t.test('20 concurrent creates of one id: identical ones all 200; different ones one 200 and 19 409s', async (t) => {
  const identical = await Promise.all(
    Array.from({ length: 20 }, () => postPlant(app, { id: 6, name: 'Calathea', tag: 'indoor' }, { t })),
  )
  t.strictSame(new Set(identical.map((response) => response.statusCode)), new Set([200]))
  t.strictSame(await storedRows('6'), [{ id: '6', name: 'Calathea', tag: 'indoor' }])
  const names = Array.from({ length: 20 }, (_, index) => `Fern ${index}`)
  const answers = await Promise.all(names.map((name) => postPlant(app, { id: 7, name }, { t })))
  const statuses = answers.map((response) => response.statusCode)
  t.strictSame([...statuses].sort(), [200, ...Array(19).fill(409)], 'one 200, nineteen 409')
  const winner = names[statuses.indexOf(200)]!
  t.strictSame(await storedRows('7'), [{ id: '7', name: winner, tag: null }])
  t.equal((await postPlant(app, { id: 7, name: winner }, { t })).statusCode, 200, 'the winner replays')
})

t.test('ids are exact over int64: 2^53 + 1 and 2^53 are two plants, the bounds stored exactly', async (t) => {
  const ids = [
    '9007199254740993',
    '9007199254740992',
    '-9223372036854775808',
    '9223372036854775807',
    '9223372036854775806',
  ]
  for (const id of ids)
    t.equal((await postPlant(app, `{"id":${id},"name":"n${id}"}`, { t })).statusCode, 200, `${id}: no conflict`)
  for (const id of ids) {
    t.equal((await postPlant(app, `{"id":${id},"name":"n${id}"}`, { t })).statusCode, 200, `${id} replayed`)
    t.equal((await postPlant(app, `{"id":${id},"name":"other"}`, { t })).statusCode, 409, `${id} conflicts`)
    t.strictSame(await storedRows(id), [{ id, name: `n${id}`, tag: null }])
  }
})

t.test('an id that is not a signed 64-bit integer is 400 naming id', async (t) => {
  for (const id of [
    '9223372036854775808',
    '-9223372036854775809',
    '18446744073709551616',
    '1e30',
    '-1e30',
    '1.5',
    '9007199254740993.5',
  ])
    t.match(
      (await postPlant(app, `{"id":${id},"name":"Cactus"}`, { t })).json(),
      { error: 400, message: /\bbody\/id\b/ },
      id,
    )
})
