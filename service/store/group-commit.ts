/**
 * Group commit: creates that arrive together are written in one transaction (one fsync or
 * round trip), each answered with its own outcome once committed. A save waits at most for
 * the end of the event-loop turn when a connection is free: an idle service adds no latency.
 * @module
 */
import type { PlantRecord, SaveOutcome } from './plant-repository.js'
import { StoreUnavailableError } from './plant-repository.js'

interface BatchWriter {
  /** Saves plants in one transaction; all or nothing. */
  saveAll(plants: readonly PlantRecord[]): Promise<SaveOutcome[]>
}

/** Traces transactions (tracing.ts, loaded only when tracing is on); without one, no tracing work. */
export interface BatchTracer {
  /** The caller's trace context, taken as its save joins the queue. */
  capture(): unknown
  /** Runs one transaction's write in a span; `contexts` are its saves' captured contexts, in order. */
  run<T>(contexts: readonly unknown[], write: () => Promise<T>): Promise<T>
}

interface GroupCommitOptions {
  /** Most plants in one transaction (≥ 1). */
  readonly maxBatch: number
  /** Most transactions in flight at once (≥ 1): 1 for SQLite's one writer, the pool size for PostgreSQL. */
  readonly maxInFlight: number
  /** Told of every transaction: plants in it, duration in seconds, and whether it failed (metrics). */
  readonly onBatch?: (size: number, seconds: number, failed: boolean) => void
  readonly tracer?: BatchTracer | undefined
}

interface Pending {
  readonly plant: PlantRecord
  readonly resolve: (outcome: SaveOutcome) => void
  readonly reject: (error: unknown) => void
  readonly context: unknown
}

/** A {@link BatchWriter} front that batches concurrent saves. */
export class GroupCommit {
  private queue: Pending[] = []
  private inFlight = 0
  private scheduled = false

  constructor(
    private readonly writer: BatchWriter,
    private readonly options: GroupCommitOptions,
  ) {}

  /**
   * Saves one plant in the next batch; resolves once the batch has committed durably.
   * @throws {StoreUnavailableError} when the store is unavailable (nothing of the batch is
   *   stored); another error when this plant's own write fails: a batch that fails for
   *   another reason is retried plant by plant.
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
    const observe = (failed: boolean) => this.options.onBatch?.(batch.length, Number(process.hrtime.bigint() - started) / 1e9, failed)
    try {
      const plants = batch.map((pending) => pending.plant)
      const tracer = this.options.tracer
      const outcomes = await (tracer === undefined
        ? this.writer.saveAll(plants)
        : tracer.run(batch.map((pending) => pending.context), () => this.writer.saveAll(plants)))
      observe(false)
      batch.forEach((pending, index) => pending.resolve(outcomes[index]!))
    } catch (error) {
      observe(true)
      if (batch.length === 1 || error instanceof StoreUnavailableError) {
        for (const pending of batch) pending.reject(error)
      } else {
        // Find the culprit: each plant alone, in order (same-id replays still compare).
        for (const pending of batch) await this.write([pending])
      }
    } finally {
      this.inFlight--
      this.schedule()
    }
  }
}
