/**
 * In-process rate-limit store, a segmented LRU, so a flood of new addresses cannot evict a known attacker's count.
 * @module
 */
import { LruMap } from 'toad-cache'

/** `current` hits so far, `ttl` ms left. */
interface Window {
  current: number
  ttl: number
  startMs: number
}

type Callback = (error: Error | null, result: { current: number; ttl: number }) => void

/** Keys per segment; two segments. */
export const SEGMENT_SIZE = 5000

/** @fastify/rate-limit's store interface: a key moves to the protected segment on its second hit. */
export class SegmentedStore {
  private readonly probationary: LruMap<Window>
  private readonly protectedKeys: LruMap<Window>

  /** @param options - `segmentSize` for tests. */
  constructor(options: { segmentSize?: number } = {}) {
    this.probationary = new LruMap(options.segmentSize ?? SEGMENT_SIZE)
    this.protectedKeys = new LruMap(options.segmentSize ?? SEGMENT_SIZE)
  }

  /** @param timeWindow - ms. */
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

  /** Every limit shares one store. */
  child(): SegmentedStore {
    return this
  }

  /** Keys held, in both segments. */
  get size(): number {
    return this.probationary.size + this.protectedKeys.size
  }
}
