/** Stores plants, the database deciding whether a create is new, a replay, or a conflict. @module */
import type { Store } from './store.ts'

export { StoreUnavailableError } from './store.ts'

export interface PlantRecord {
  readonly id: bigint
  readonly name: string
  readonly tag: string | null
}

/** `replayed`: same id and content stored; `conflict`: same id, other content (`stored`). */
export type SaveOutcome =
  | { readonly status: 'created' | 'replayed'; readonly stored: PlantRecord }
  | { readonly status: 'conflict'; readonly stored: PlantRecord }

export class PlantRepository {
  protected readonly store: Store

  constructor(store: Store) {
    this.store = store
  }

  /**
   * One atomic INSERT; the losers are read back without a transaction, as rows never change.
   * @throws {StoreUnavailableError} when unreachable or overloaded.
   */
  async saveAll(plants: readonly PlantRecord[]): Promise<SaveOutcome[]> {
    const first = new Map<string, PlantRecord>()
    for (const plant of plants) if (!first.has(String(plant.id))) first.set(String(plant.id), plant)
    // One lock order, else batches sharing ids deadlock.
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
    const rows =
      others.length === 0
        ? []
        : await db.selectFrom('plant').select(['id', 'name', 'tag']).where('id', 'in', others).execute()
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
