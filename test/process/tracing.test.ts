/**
 * Tracing in the process: with `OTEL_EXPORTER_OTLP_ENDPOINT` spans reach a collector in the caller's trace (tree:
 * app/tracing.test.ts); without, no SDK module loads.
 */
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { JSON_HEADERS, TEST_DATABASE_URL } from '../helpers/app.ts'
import { type ExportedSpan, only, startCollector, traceparent } from '../helpers/otlp-collector.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { completedLogLine, serviceEnv, startService } from '../helpers/process.ts'

/** `NODE_OPTIONS` loading the probe of OpenTelemetry modules. */
const PROBE = `${process.env.NODE_OPTIONS ?? ''} --import ${fileURLToPath(new URL('../fixtures/otel-module-probe.ts', import.meta.url))}`

t.test(
  'with OTEL_EXPORTER_OTLP_ENDPOINT spans reach the collector in the caller’s trace and log lines carry it; ' +
    'without, no SDK module is loaded',
  async (t) => {
    const collector = await startCollector(t)
    const env = serviceEnv(t, { DATABASE_URL: TEST_DATABASE_URL, NODE_OPTIONS: PROBE })
    // A short export delay: the default is 5 s.
    for (const otel of [{ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '100' }, {}]) {
      const traced = 'OTEL_EXPORTER_OTLP_ENDPOINT' in otel
      const service = await startService(t, { ...env, ...otel })
      const parent = traceparent()
      const response = await postPlant(
        service.url,
        { id: traced ? 7 : 8, name: 'Ficus' },
        { headers: { ...JSON_HEADERS, traceparent: parent.header } },
      )
      t.equal(response.statusCode, 200)
      const line = await completedLogLine(service, String(response.headers['x-request-id']))
      if (traced) {
        const ours = (spans: readonly ExportedSpan[]) => spans.filter((span) => span.traceId === parent.traceId)
        const spans = ours(await collector.waitFor((spans) => ours(spans).length >= 3))
        const request = only(t, spans, 'POST /plants')
        t.equal(request.parentSpanId, parent.spanId, "the request's parent is the traceparent's span")
        t.same(spans.map((span) => span.name).sort(), ['POST /plants', 'createPlant', 'store transaction'])
        t.match(line, { traceId: parent.traceId, spanId: request.spanId }, 'the log line carries the trace')
      } else t.notOk('traceId' in line, 'no trace id logged')
      t.equal(await service.stop(), 0, 'exits cleanly')
      if (traced)
        t.match(
          service.output(),
          /otel module probe: resolved @fastify\/otel/,
          'the probe sees OpenTelemetry loaded (it can fail)',
        )
      else {
        t.match(service.output(), /otel module probe: installed/, 'the probe ran')
        // prom-client loads the API (@opentelemetry/api, no-ops without an SDK) whatever the setting.
        t.notMatch(
          service.output(),
          /otel module probe: resolved (?!@opentelemetry\/api\n)/,
          'and saw no OpenTelemetry module resolved but the API',
        )
      }
    }
  },
)
