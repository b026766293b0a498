/**
 * Contract tests of `createPlant` (`POST /plants`): create, durable storage,
 * idempotent replay, conflict (also under concurrency) and exact int64 ids
 * (openapi.yaml, info.description: "Retries are safe", "200 means durable", "Integers").
 *
 * Rows are read straight from the store the app used (SQLite file, or the
 * PostgreSQL schema of {@link freshStore} when `TEST_DATABASE_URL` is set).
 *
 * @module
 */
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import t from 'tap'
import { SQLITE_FILE } from '../../service/store/sqlite.js'
import { build, freshStore } from '../helpers/app.js'
import { postPlant } from '../helpers/post-plant.js'

type StoreRef = Awaited<ReturnType<typeof freshStore>>
interface Row {
  id: string
  name: string
  tag: string | null
}

/** The rows stored under `id` (a decimal string), with the id read exactly. */
async function storedRows(store: StoreRef, id: string): Promise<Row[]> {
  if (store.databaseUrl !== undefined) {
    const client = new pg.Client({ connectionString: store.databaseUrl })
    await client.connect()
    try {
      return (await client.query<Row>('select id::text as id, name, tag from plant where id = $1::bigint', [id])).rows
    } finally {
      await client.end()
    }
  }
  const db = new SQLite(join(store.dataDir, SQLITE_FILE), { readonly: true })
  try {
    db.defaultSafeIntegers(true)
    const rows = db.prepare('select id, name, tag from plant where id = ?').all(BigInt(id)) as Array<Omit<Row, 'id'> & { id: bigint }>
    return rows.map((row) => ({ ...row, id: String(row.id) }))
  } finally {
    db.close()
  }
}

t.test('a valid NewPlant is answered 200 with the Plant', async (t) => {
  const app = await build(t)
  const response = await postPlant(app, { id: 1, name: 'Monstera deliciosa', tag: 'indoor' }, { t })
  t.equal(response.statusCode, 200)
  t.strictSame(response.json(), { name: 'Monstera deliciosa', tag: 'indoor' })
})

t.test('a Plant without a tag is answered without tag', async (t) => {
  const app = await build(t)
  const response = await postPlant(app, { id: 2, name: 'Ficus lyrata' }, { t })
  t.equal(response.statusCode, 200)
  t.strictSame(response.json(), { name: 'Ficus lyrata' })
})

t.test('a 200 means the plant is stored: a restarted app replays it and refuses a conflict', async (t) => {
  const store = await freshStore(t)
  const first = await build(t, store)
  t.equal((await postPlant(first, { id: 3, name: 'Aloe vera', tag: 'succulent' }, { t })).statusCode, 200)
  await first.close()
  const second = await build(t, store)
  const replay = await postPlant(second, { id: 3, name: 'Aloe vera', tag: 'succulent' }, { t })
  t.equal(replay.statusCode, 200)
  t.strictSame(replay.json(), { name: 'Aloe vera', tag: 'succulent' })
  t.equal((await postPlant(second, { id: 3, name: 'Aloe ferox', tag: 'succulent' }, { t })).statusCode, 409)
})

t.test('the same id with identical content is an idempotent replay: 200 with the stored Plant, stored once', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, store)
  for (const body of [{ id: 4, name: 'Pilea', tag: 'indoor' }, { tag: 'indoor', name: 'Pilea', id: 4 }, '{"id":4,"name":"Pilea","tag":"indoor"}']) {
    const response = await postPlant(app, body, { t })
    t.equal(response.statusCode, 200)
    t.strictSame(response.json(), { name: 'Pilea', tag: 'indoor' })
  }
  t.strictSame(await storedRows(store, '4'), [{ id: '4', name: 'Pilea', tag: 'indoor' }])
})

type Sent = { id: number; name: string; tag?: string }
const conflicts: Array<[string, Sent, Sent]> = [
  ['a different name', { id: 5, name: 'Pilea', tag: 'indoor' }, { id: 5, name: 'Peperomia', tag: 'indoor' }],
  ['a different tag', { id: 5, name: 'Pilea', tag: 'indoor' }, { id: 5, name: 'Pilea', tag: 'outdoor' }],
  ['a tag added', { id: 5, name: 'Pilea' }, { id: 5, name: 'Pilea', tag: 'indoor' }],
  ['a tag removed', { id: 5, name: 'Pilea', tag: 'indoor' }, { id: 5, name: 'Pilea' }],
]
for (const [difference, stored, sent] of conflicts) {
  t.test(`the same id with ${difference} is a conflict (409); the stored plant is kept`, async (t) => {
    const store = await freshStore(t)
    const app = await build(t, store)
    t.equal((await postPlant(app, stored, { t })).statusCode, 200)
    const response = await postPlant(app, sent, { t })
    t.equal(response.statusCode, 409)
    t.match(response.json(), { error: 409, message: /\bid 5\b/ })
    const replay = await postPlant(app, stored, { t })
    t.equal(replay.statusCode, 200, 'the first content still replays')
    t.strictSame(await storedRows(store, '5'), [{ id: '5', name: stored.name, tag: stored.tag ?? null }])
  })
}

t.test('20 concurrent identical creates of one id are all 200, stored once', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, store)
  const sent = { id: 6, name: 'Calathea', tag: 'indoor' }
  const responses = await Promise.all(Array.from({ length: 20 }, () => postPlant(app, sent, { t })))
  t.strictSame(
    responses.map((response) => response.statusCode),
    Array(20).fill(200),
  )
  t.strictSame(await storedRows(store, '6'), [{ id: '6', name: 'Calathea', tag: 'indoor' }])
})

t.test('20 concurrent creates of one id with different names: exactly one 200, 19 conflicts, the winner replays', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, store)
  const names = Array.from({ length: 20 }, (_, index) => `Fern ${index}`)
  const responses = await Promise.all(names.map((name) => postPlant(app, { id: 7, name }, { t })))
  const statuses = responses.map((response) => response.statusCode)
  t.equal(statuses.filter((status) => status === 200).length, 1, 'one 200')
  t.equal(statuses.filter((status) => status === 409).length, 19, 'nineteen 409')
  const winner = names[statuses.indexOf(200)]!
  t.strictSame(await storedRows(store, '7'), [{ id: '7', name: winner, tag: null }])
  t.equal((await postPlant(app, { id: 7, name: winner }, { t })).statusCode, 200, 'the winner replays')
})

t.test('ids are exact beyond 2^53: 9007199254740993 and 9007199254740992 are two plants', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, store)
  t.equal((await postPlant(app, '{"id":9007199254740993,"name":"odd"}', { t })).statusCode, 200)
  t.equal((await postPlant(app, '{"id":9007199254740992,"name":"even"}', { t })).statusCode, 200, 'no conflict with its rounded neighbour')
  t.equal((await postPlant(app, '{"id":9007199254740993,"name":"odd"}', { t })).statusCode, 200)
  t.equal((await postPlant(app, '{"id":9007199254740992,"name":"even"}', { t })).statusCode, 200)
  t.equal((await postPlant(app, '{"id":9007199254740993,"name":"even"}', { t })).statusCode, 409)
  t.equal((await postPlant(app, '{"id":9007199254740992,"name":"odd"}', { t })).statusCode, 409)
  t.strictSame(await storedRows(store, '9007199254740993'), [{ id: '9007199254740993', name: 'odd', tag: null }])
  t.strictSame(await storedRows(store, '9007199254740992'), [{ id: '9007199254740992', name: 'even', tag: null }])
})

t.test('the int64 bounds are accepted and stored exactly', async (t) => {
  const store = await freshStore(t)
  const app = await build(t, store)
  for (const id of ['-9223372036854775808', '9223372036854775807', '9223372036854775806']) {
    t.equal((await postPlant(app, `{"id":${id},"name":"n${id}"}`, { t })).statusCode, 200, `${id} created`)
    t.equal((await postPlant(app, `{"id":${id},"name":"n${id}"}`, { t })).statusCode, 200, `${id} replayed`)
    t.equal((await postPlant(app, `{"id":${id},"name":"other"}`, { t })).statusCode, 409, `${id} conflicts`)
    t.strictSame(await storedRows(store, id), [{ id, name: `n${id}`, tag: null }])
  }
})

for (const id of ['9223372036854775808', '-9223372036854775809', '18446744073709551616', '1e30', '-1e30', '1.5', '9007199254740993.5']) {
  t.test(`id ${id} is not a signed 64-bit integer: 400 naming id`, async (t) => {
    const app = await build(t)
    const response = await postPlant(app, `{"id":${id},"name":"Cactus"}`, { t })
    t.equal(response.statusCode, 400)
    t.match(response.json(), { error: 400, message: /\bbody\/id\b/ })
  })
}
