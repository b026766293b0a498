/**
 * Tracing in the service process: with `OTEL_EXPORTER_OTLP_ENDPOINT` the spans of a
 * create reach a collector over OTLP/HTTP in the caller's trace, and its log lines
 * carry the trace id; without it no module of the OpenTelemetry SDK or instrumentation
 * is loaded.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { JSON_HEADERS, TEST_DATABASE_URL, TOKEN } from '../helpers/app.js'
import { only, startCollector, traceparent } from '../helpers/otlp-collector.js'
import { type PlantResponse, postPlant } from '../helpers/post-plant.js'
import { completedLogLine, startService } from '../helpers/process.js'

/** `NODE_OPTIONS` that load the probe reporting every OpenTelemetry module the process resolves. */
const PROBE = `${process.env.NODE_OPTIONS ?? ''} --import ${fileURLToPath(new URL('../fixtures/otel-module-probe.ts', import.meta.url))}`

/** POSTs a NewPlant with a `traceparent` to the service. */
function create(url: string, traceparentHeader: string): Promise<PlantResponse> {
  return postPlant(url, { id: 7, name: 'Ficus' }, { headers: { ...JSON_HEADERS, traceparent: traceparentHeader } })
}

t.test("with OTEL_EXPORTER_OTLP_ENDPOINT a create's spans reach the collector in the caller's trace, and its log lines carry the trace id", async (t) => {
  const collector = await startCollector(t)
  const env = { PLANT_STORE_TOKENS: TOKEN, DATA_DIR: join(t.testdir(), 'data'), DATABASE_URL: TEST_DATABASE_URL, NODE_ENV: 'test' }
  // A short export delay (the SDK reads OTEL_BSP_SCHEDULE_DELAY); the default is 5 s.
  const service = await startService(t, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '100', NODE_OPTIONS: PROBE })
  const parent = traceparent()
  const response = await create(service.url, parent.header)
  t.equal(response.statusCode, 200)
  const spans = (await collector.waitFor((spans) => spans.filter((span) => span.traceId === parent.traceId).length >= 3)).filter((span) => span.traceId === parent.traceId)
  const request = only(t, spans, 'POST /plants')
  t.equal(request.parentSpanId, parent.spanId, "the request's parent is the traceparent's span")
  t.match(request.attributes, { 'http.route': '/plants', 'http.response.status_code': 200 })
  t.equal(only(t, spans, 'createPlant').parentSpanId, request.spanId, 'the handler under the request')
  t.equal(only(t, spans, 'store transaction').parentSpanId, only(t, spans, 'createPlant').spanId, 'the transaction under the handler')

  const line = await completedLogLine(service, String(response.headers['x-request-id']))
  t.match(line, { traceId: parent.traceId, spanId: request.spanId }, 'the log line carries the trace')
  t.match(service.output(), /otel module probe: resolved @fastify\/otel/, 'the probe sees OpenTelemetry loaded (it can fail)')
  t.equal(await service.stop(), 0, 'exits cleanly, the exporter shut down')
})

t.test('without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry SDK module is loaded and log lines carry no trace id', async (t) => {
  const env = { PLANT_STORE_TOKENS: TOKEN, DATA_DIR: join(t.testdir(), 'data'), DATABASE_URL: TEST_DATABASE_URL, NODE_ENV: 'test' }
  const service = await startService(t, { ...env, NODE_OPTIONS: PROBE })
  const response = await create(service.url, traceparent().header)
  t.equal(response.statusCode, 200)
  const line = await completedLogLine(service, String(response.headers['x-request-id']))
  t.notOk('traceId' in line, 'no trace id logged')
  t.equal(await service.stop(), 0)
  t.match(service.output(), /otel module probe: installed/, 'the probe ran')
  // prom-client loads the API (@opentelemetry/api, no-ops without an SDK) whatever the setting.
  t.notMatch(service.output(), /otel module probe: resolved (?!@opentelemetry\/api\n)/, 'and saw no OpenTelemetry module resolved but the API')
})
