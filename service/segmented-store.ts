/**
 * The in-process store of the rate limits (@fastify/rate-limit's `store` option),
 * for a single process without Redis. Its memory is bounded, and a flood of new
 * keys cannot reset the count of a key already seen twice.
 *
 * @fastify/rate-limit's own store is one LRU of 5,000 keys: 5,000 new client
 * addresses, each failing once, push a known attacker's count out, and its next
 * window starts at zero. This one is a segmented LRU (SLRU): a key starts in the
 * probationary segment and moves to the protected one on its second hit. New keys
 * only ever evict probationary ones; a protected key leaves when its segment is
 * full of keys that were each hit more recently, twice or more.
 *
 * @module
 */
import { LruMap } from 'toad-cache'

/** One key's fixed window, as @fastify/rate-limit reads it: hits so far, milliseconds left. */
interface Window {
  current: number
  ttl: number
  startMs: number
}

type Callback = (error: Error | null, result: { current: number; ttl: number }) => void

/** Keys per segment: at most twice this many windows are held (about 200 bytes each). */
export const SEGMENT_SIZE = 5000

/** A fixed-window counter per key in a segmented LRU; @fastify/rate-limit's store interface. */
export class SegmentedStore {
  private readonly probationary: LruMap<Window>
  private readonly protectedKeys: LruMap<Window>

  /**
   * @param options - `segmentSize`: keys per segment (tests use a small one).
   *   @fastify/rate-limit constructs the store with its own settings, which have none.
   */
  constructor(options: { segmentSize?: number } = {}) {
    this.probationary = new LruMap(options.segmentSize ?? SEGMENT_SIZE)
    this.protectedKeys = new LruMap(options.segmentSize ?? SEGMENT_SIZE)
  }

  /** Counts one hit of `key` in a window of `timeWindow` ms, and tells the count and the ms left. */
  incr(key: string, done: Callback, timeWindow: number): void {
    const now = Date.now()
    const known = this.protectedKeys.get(key)
    const seen = known ?? this.probationary.get(key)
    let window: Window
    if (seen === undefined || seen.startMs + timeWindow <= now) {
      window = { current: 1, ttl: timeWindow, startMs: now }
    } else {
      window = seen
      window.current++
      window.ttl = timeWindow - (now - window.startMs)
    }
    if (known !== undefined || seen !== undefined) {
      this.probationary.delete(key)
      this.protectedKeys.set(key, window)
    } else {
      this.probationary.set(key, window)
    }
    done(null, { current: window.current, ttl: window.ttl })
  }

  /** Every limit of the plugin shares one store, so every key is counted in one place. */
  child(): SegmentedStore {
    return this
  }

  /** How many keys are held: at most twice the segment size. */
  get size(): number {
    return this.probationary.size + this.protectedKeys.size
  }
}
