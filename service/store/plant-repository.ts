/**
 * Stores plants and decides, in the database, whether a create is new, an idempotent
 * replay, or a conflict. Dialect-free Kysely code.
 * @module
 */
import type { Store } from './store.js'

/** A plant as stored: the NewPlant of the contract with an exact id. */
export interface PlantRecord {
  readonly id: bigint
  readonly name: string
  readonly tag: string | null
}

/** `replayed`: the same id and content were stored; `conflict`: the same id with other content (`stored`). */
export type SaveOutcome =
  | { readonly status: 'created' | 'replayed'; readonly stored: PlantRecord }
  | { readonly status: 'conflict'; readonly stored: PlantRecord }

/** The store cannot be reached or is overloaded; nothing was stored. A retry later may succeed. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError'
}

/** Stores plants; rows are never changed once committed. */
export class PlantRepository {
  constructor(protected readonly store: Store) {}

  /**
   * Saves plants with one multi-row `INSERT … ON CONFLICT (id) DO NOTHING RETURNING id`:
   * one atomic commit for all. The primary key decides which writer of an id wins; the
   * others get `replayed` or `conflict` against the row read afterwards, with no
   * transaction, as rows never change. Within one call the first plant of an id is inserted;
   * rows are inserted in id order, so concurrent calls lock shared ids in one order.
   * @returns one outcome per plant, in order, all durable.
   * @throws {StoreUnavailableError} when the store is unreachable or overloaded; the
   *   database's own error otherwise. A failed INSERT stores none of its rows.
   */
  async saveAll(plants: readonly PlantRecord[]): Promise<SaveOutcome[]> {
    try {
      return await this.write(plants)
    } catch (error) {
      if (this.store.isUnavailable(error)) throw new StoreUnavailableError('The store is unavailable', { cause: error })
      throw error
    }
  }

  private async write(plants: readonly PlantRecord[]): Promise<SaveOutcome[]> {
    const first = new Map<string, PlantRecord>()
    for (const plant of plants) if (!first.has(String(plant.id))) first.set(String(plant.id), plant)
    // One lock order for every batch: two batches inserting the same ids in opposite orders deadlock.
    const candidates = [...first.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
    const db = this.store.db
    const inserted = await db
      .insertInto('plant')
      .values(candidates.map(({ id, name, tag }) => ({ id, name, tag })))
      .onConflict((conflict) => conflict.column('id').doNothing())
      .returning('id')
      .execute()
    const insertedIds = new Set(inserted.map((row) => String(row.id)))
    const others = candidates.filter((plant) => !insertedIds.has(String(plant.id))).map((plant) => plant.id)
    const rows = others.length === 0 ? [] : await db.selectFrom('plant').select(['id', 'name', 'tag']).where('id', 'in', others).execute()
    const existing = new Map(rows.map((row) => [String(row.id), { id: BigInt(row.id), name: row.name, tag: row.tag }]))
    const firstSeen = new Set<string>()
    return plants.map((plant) => {
      const key = String(plant.id)
      const stored = existing.get(key) ?? first.get(key)!
      const isFirst = !firstSeen.has(key)
      firstSeen.add(key)
      if (stored.name !== plant.name || stored.tag !== plant.tag) return { status: 'conflict', stored }
      return { status: isFirst && !existing.has(key) ? 'created' : 'replayed', stored }
    })
  }
}
