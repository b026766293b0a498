/**
 * Stores plants, the database deciding whether a create is new, a replay, or a conflict; and the group commit in
 * front of it: concurrent creates share one transaction.
 * @module
 */
import { insertNew, type PlantRecord, type Store, StoreUnavailableError } from './store.ts'

export { type PlantRecord, StoreUnavailableError } from './store.ts'

/** `replayed`: same id and content stored; `conflict`: same id, other content (`stored`). */
export type SaveOutcome =
  | { readonly status: 'created' | 'replayed'; readonly stored: PlantRecord }
  | { readonly status: 'conflict'; readonly stored: PlantRecord }

/** The plants' repository: one atomic write per batch, the database deciding what is new. */
export class PlantRepository {
  protected readonly store: Store

  constructor(store: Store) {
    this.store = store
  }

  /**
   * One atomic write of the plants whose id is new; the first plant of an id in `plants` is the one stored.
   * @returns each plant's outcome, in order.
   * @throws {StoreUnavailableError} when unreachable or overloaded.
   */
  async saveAll(plants: readonly PlantRecord[]): Promise<SaveOutcome[]> {
    const firstById = new Map<bigint, PlantRecord>()
    const entries = plants.map((plant) => {
      let first = firstById.get(plant.id)
      if (first === undefined) firstById.set(plant.id, (first = plant))
      return { plant, first }
    })
    // One lock order, else batches sharing ids deadlock.
    const candidates = [...firstById.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
    const existing = await insertNew(this.store, candidates)
    const answered = new Set<bigint>()
    return entries.map(({ plant, first }) => {
      const before = existing.get(plant.id)
      const stored = before ?? first
      const created = before === undefined && !answered.has(plant.id)
      answered.add(plant.id)
      if (stored.name !== plant.name || stored.tag !== plant.tag) return { status: 'conflict', stored }
      return { status: created ? 'created' : 'replayed', stored }
    })
  }
}

interface BatchWriter {
  saveAll(plants: readonly PlantRecord[]): Promise<SaveOutcome[]>
}

/** Implemented by tracing.ts. */
export interface BatchTracer {
  capture(): unknown
  /** `contexts`: the batch's captured contexts, in order. */
  run<T>(contexts: readonly unknown[], write: () => Promise<T>): Promise<T>
}

interface GroupCommitOptions {
  readonly maxBatch: number
  /** 1 for SQLite's one writer, the pool size for PostgreSQL. */
  readonly maxInFlight: number
  /** `seconds`: the transaction's duration. */
  readonly onBatch?: (size: number, seconds: number, failed: boolean) => void
  readonly tracer?: BatchTracer | undefined
}

interface Pending {
  readonly plant: PlantRecord
  readonly resolve: (outcome: SaveOutcome) => void
  readonly reject: (error: unknown) => void
  readonly context: unknown
}

/**
 * Event-loop turns a batch of one writer gathers creates before it goes, unless `maxBatch` wait: the creates one
 * commit answers come back in time for the next. At 1 turn the clients split into two halves that take turns: batches
 * half as large, twice the commits (docs/benchmarks.md, "What moved the figures").
 */
const ONE_WRITER_TURNS = 3

/** Group commit: once a writer is free, a save waits an event-loop turn (one writer: a few), then goes with all. */
export class GroupCommit {
  private queue: Pending[] = []
  private inFlight = 0
  private scheduled = false
  private readonly writer: BatchWriter
  private readonly options: GroupCommitOptions

  constructor(writer: BatchWriter, options: GroupCommitOptions) {
    this.writer = writer
    this.options = options
  }

  /**
   * Resolves once durable.
   * @throws {StoreUnavailableError} when the store is unavailable; else only this plant's own error.
   */
  save(plant: PlantRecord): Promise<SaveOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ plant, resolve, reject, context: this.options.tracer?.capture() })
      this.schedule()
    })
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return
    this.scheduled = true
    let turns = this.options.maxInFlight === 1 ? ONE_WRITER_TURNS : 1
    const dispatch = () => {
      if (--turns > 0 && this.queue.length < this.options.maxBatch) return void setImmediate(dispatch)
      this.scheduled = false
      while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
        void this.write(this.queue.splice(0, this.options.maxBatch))
      }
    }
    setImmediate(dispatch)
  }

  private async write(batch: Pending[]): Promise<void> {
    this.inFlight++
    const started = process.hrtime.bigint()
    const observe = (failed: boolean) =>
      this.options.onBatch?.(batch.length, Number(process.hrtime.bigint() - started) / 1e9, failed)
    try {
      const plants = batch.map((pending) => pending.plant)
      const tracer = this.options.tracer
      const outcomes = await (tracer === undefined
        ? this.writer.saveAll(plants)
        : tracer.run(
            batch.map((pending) => pending.context),
            () => this.writer.saveAll(plants),
          ))
      observe(false)
      outcomes.forEach((outcome, index) => batch[index]?.resolve(outcome))
    } catch (error) {
      observe(true)
      if (batch.length === 1 || error instanceof StoreUnavailableError) {
        for (const pending of batch) pending.reject(error)
      } else {
        // Find the culprit, so only its own save fails.
        for (const pending of batch) await this.write([pending])
      }
    } finally {
      this.inFlight--
      this.schedule()
    }
  }
}
