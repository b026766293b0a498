/** The in-process rate-limit store: a window that passes, and bounded memory. */
import t from 'tap'
import { SegmentedStore } from '../../service/plugins/protection/segmented-store.ts'

function hit(store: SegmentedStore, key: string, windowMs = 60000): { current: number; ttl: number } {
  let answer: { current: number; ttl: number } | Error = { current: 0, ttl: 0 }
  store.incr(key, (error, result) => (answer = error ?? result), windowMs)
  if (answer instanceof Error) throw answer
  return answer
}

t.test('a window that has passed starts again at one', async (t) => {
  const store = new SegmentedStore()
  hit(store, 'a', 1)
  hit(store, 'a', 1)
  await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(hit(store, 'a', 1).current, 1)
})

t.test(
  'memory is bounded: at most two segments of keys, whatever comes; a key seen once can be pushed out',
  async (t) => {
    const store = new SegmentedStore({ segmentSize: 100 })
    for (let i = 0; i < 1000; i++) hit(store, `once-${i}`)
    t.equal(store.size, 100, 'keys seen once fill the probationary segment only')
    for (let i = 0; i < 1000; i++) {
      hit(store, `twice-${i}`)
      hit(store, `twice-${i}`)
    }
    t.ok(store.size <= 200, `then the protected one too: ${store.size} keys`)
    hit(store, 'seen-once')
    for (let i = 0; i < 100; i++) hit(store, `more-${i}`)
    t.equal(hit(store, 'seen-once').current, 1, 'a key seen once can be pushed out: that is what bounds the memory')
    t.equal(store.child(), store, 'every limit counts in the one store')
  },
)
