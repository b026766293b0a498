/**
 * Transaction spans of group commit (`service/tracing.ts`): a transaction that writes
 * the creates of several requests is a child of the first and links the others.
 */
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api'
import t from 'tap'
import { GroupCommit } from '../../service/store/group-commit.js'
import type { PlantRecord } from '../../service/store/plant-repository.js'
import { startTracing } from '../../service/tracing.js'
import { only, startCollector, traceparent } from '../helpers/otlp-collector.js'

t.test('a transaction of several creates is a child of the one that started the batch and links the others', async (t) => {
  const collector = await startCollector(t)
  const tracing = startTracing(collector.url)
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  // A writer held until released: while it holds the first batch, the next saves queue up together.
  const writer = {
    saveAll: async (plants: readonly PlantRecord[]) => {
      await gate
      return plants.map((stored) => ({ status: 'created' as const, stored }))
    },
  }
  const commit = new GroupCommit(writer, { maxBatch: 10, maxInFlight: 1, tracer: tracing.batchTracer('postgres') })
  const plant = (id: number): PlantRecord => ({ id: BigInt(id), name: `plant ${id}`, tag: null })
  // Each save as if made inside the handler span of a request of its own trace.
  const callers = [1, 2, 3, 4].map(() => traceparent())
  const saveAs = (caller: ReturnType<typeof traceparent>, id: number) =>
    context.with(trace.setSpanContext(ROOT_CONTEXT, { traceId: caller.traceId, spanId: caller.spanId, traceFlags: TraceFlags.SAMPLED }), () => commit.save(plant(id)))

  const first = saveAs(callers[0]!, 1)
  await new Promise((resolve) => setImmediate(resolve))
  const queued = callers.slice(1).map((caller, index) => saveAs(caller, index + 2))
  release()
  t.match(await Promise.all([first, ...queued]), Array(4).fill({ status: 'created' }))
  await tracing.shutdown()

  t.equal(collector.spans.length, 2, 'two transactions')
  const alone = only(
    t,
    collector.spans.filter((span) => span.traceId === callers[0]!.traceId),
    'store transaction',
  )
  t.match(alone, { parentSpanId: callers[0]!.spanId, links: [], attributes: { 'db.system.name': 'postgresql', 'db.operation.batch.size': 1 } })
  const batch = only(
    t,
    collector.spans.filter((span) => span.traceId === callers[1]!.traceId),
    'store transaction',
  )
  t.equal(batch.parentSpanId, callers[1]!.spanId, 'a child of the first create of its batch')
  const others = callers.slice(2).map(({ traceId, spanId }) => ({ traceId, spanId }))
  t.same(batch.links, others, 'linked to the others, in order')
  t.equal(batch.attributes['db.operation.batch.size'], 3)
})
