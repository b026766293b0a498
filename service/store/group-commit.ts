/**
 * Group commit: concurrent creates share one transaction; a save waits at most one event-loop turn for a connection.
 * @module
 */
import type { PlantRecord, SaveOutcome } from './plant-repository.ts'
import { StoreUnavailableError } from './store.ts'

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
    setImmediate(() => {
      this.scheduled = false
      while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
        void this.write(this.queue.splice(0, this.options.maxBatch))
      }
    })
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
      batch.forEach((pending, index) => pending.resolve(outcomes[index]!))
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
