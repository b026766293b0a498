/**
 * The in-process rate-limit store, a segmented LRU: in @fastify/rate-limit's own single
 * LRU a flood of new addresses pushes a known attacker's count out. Here a key moves to
 * the protected segment on its second hit, and new keys only evict probationary ones.
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

  /** @param options - `segmentSize` for tests; @fastify/rate-limit passes its own settings, without one. */
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

  get size(): number {
    return this.probationary.size + this.protectedKeys.size
  }
}
