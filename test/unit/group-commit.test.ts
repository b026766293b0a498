/**
 * Group commit: concurrent creates share one transaction, and each still gets its
 * own durable outcome (created, replayed, conflict), including when a batch fails.
 */
import t from 'tap'
import { GroupCommit } from '../../service/store/group-commit.js'
import { openStore } from '../../service/store/database.js'
import { migrateToLatest } from '../../service/store/migrate.js'
import { type PlantRecord, PlantRepository, StoreUnavailableError } from '../../service/store/plant-repository.js'
import { freshStore, storeOptions, TEST_DATABASE_URL } from '../helpers/app.js'

async function repository(t: Parameters<typeof freshStore>[0]) {
  const store = openStore(storeOptions(await freshStore(t)))
  t.teardown(() => store.close())
  await migrateToLatest(store)
  return new PlantRepository(store)
}

const plant = (id: bigint, name: string, tag: string | null = null): PlantRecord => ({ id, name, tag })

t.test('concurrent saves go out in one transaction, each answered with its own outcome', async (t) => {
  const repo = await repository(t)
  const batches: number[] = []
  const group = new GroupCommit(repo, { maxBatch: 100, maxInFlight: 1, onBatch: (size) => batches.push(size) })
  const outcomes = await Promise.all([
    group.save(plant(1n, 'a')),
    group.save(plant(2n, 'b', 'x')),
    group.save(plant(1n, 'a')),
    group.save(plant(1n, 'changed')),
    group.save(plant(2n, 'b')),
  ])
  t.same(batches, [5], 'one transaction for five saves')
  t.same(
    outcomes.map((outcome) => outcome.status),
    ['created', 'created', 'replayed', 'conflict', 'conflict'],
  )
  t.same(outcomes[3]!.stored, plant(1n, 'a'), 'a conflict reports what is stored')
  t.same((await group.save(plant(2n, 'b', 'x'))).status, 'replayed', 'a later replay compares with the stored row')
})

t.test('batches are bounded by maxBatch; an idle save goes out alone at once', async (t) => {
  const repo = await repository(t)
  const batches: number[] = []
  const group = new GroupCommit(repo, { maxBatch: 3, maxInFlight: 1, onBatch: (size) => batches.push(size) })
  await group.save(plant(100n, 'alone'))
  t.same(batches, [1])
  await Promise.all(Array.from({ length: 7 }, (_, i) => group.save(plant(BigInt(i), `p${i}`))))
  t.same(batches.slice(1), [3, 3, 1])
})

t.test('a failed batch is retried plant by plant: only the failing plant gets the error', async (t) => {
  const calls: number[] = []
  const failure = new Error('this plant cannot be written')
  const writer = {
    saveAll: async (plants: readonly PlantRecord[]) => {
      calls.push(plants.length)
      if (plants.some((p) => p.name === 'bad')) throw failure
      return plants.map((p) => ({ status: 'created' as const, stored: p }))
    },
  }
  const failed: boolean[] = []
  const group = new GroupCommit(writer, { maxBatch: 10, maxInFlight: 1, onBatch: (_size, _seconds, isFailed) => failed.push(isFailed) })
  const results = await Promise.allSettled([group.save(plant(1n, 'good')), group.save(plant(2n, 'bad')), group.save(plant(3n, 'good'))])
  t.same(
    results.map((result) => result.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  )
  t.equal((results[1] as PromiseRejectedResult).reason, failure)
  t.same(calls, [3, 1, 1, 1], 'the batch, then each plant alone')
  t.same(failed, [true, false, true, false])
})

t.test('a store outage fails the whole batch with StoreUnavailableError, without retrying', async (t) => {
  let calls = 0
  const writer = {
    saveAll: async () => {
      calls++
      throw new StoreUnavailableError('down')
    },
  }
  const group = new GroupCommit(writer, { maxBatch: 10, maxInFlight: 1 })
  const results = await Promise.allSettled([group.save(plant(1n, 'a')), group.save(plant(2n, 'b'))])
  t.ok(results.every((result) => result.status === 'rejected' && result.reason instanceof StoreUnavailableError))
  t.equal(calls, 1)
})

t.test('several transactions in flight when the store allows it (PostgreSQL pool)', async (t) => {
  let inFlight = 0
  let most = 0
  const writer = {
    saveAll: async (plants: readonly PlantRecord[]) => {
      most = Math.max(most, ++inFlight)
      await new Promise((resolve) => setImmediate(resolve))
      inFlight--
      return plants.map((p) => ({ status: 'created' as const, stored: p }))
    },
  }
  const group = new GroupCommit(writer, { maxBatch: 2, maxInFlight: 3 })
  await Promise.all(Array.from({ length: 12 }, (_, i) => group.save(plant(BigInt(i), 'x'))))
  t.equal(most, 3)
})

t.test('the repository rolls a failed transaction back: nothing of it is stored', async (t) => {
  const repo = await repository(t)
  // A name the store refuses mid-transaction: PostgreSQL rejects NUL in text; on
  // SQLite, a value of a type better-sqlite3 cannot bind.
  const bad = { id: 2n, name: (TEST_DATABASE_URL ? 'nul\u0000' : { not: 'text' }) as string, tag: null }
  await t.rejects(repo.saveAll([plant(1n, 'good'), bad]))
  t.same((await repo.saveAll([plant(1n, 'good')])).map((outcome) => outcome.status), ['created'], 'the good plant of the failed transaction was not stored')
})

t.test('batches of a size already written reuse its statement and store each row as given', async (t) => {
  const repo = await repository(t)
  const first = [plant(10n, 'a', 'x'), plant(11n, 'b'), plant(9007199254740993n, 'c', 'y')]
  const second = [plant(-9223372036854775808n, 'd'), plant(21n, 'e', 'z'), plant(9223372036854775807n, 'f', 'w')]
  t.same((await repo.saveAll(first)).map((outcome) => outcome.status), ['created', 'created', 'created'])
  t.same((await repo.saveAll(second)).map((outcome) => outcome.status), ['created', 'created', 'created'])
  // Each row was stored with its own id, name and tag: the same content replays, any other conflicts.
  const replays = await repo.saveAll([...first, ...second])
  t.same(replays.map((outcome) => outcome.status), Array(6).fill('replayed'))
  t.same(
    replays.map((outcome) => outcome.stored),
    [...first, ...second],
  )
})
