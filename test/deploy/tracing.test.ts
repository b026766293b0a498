/**
 * One trace from the client through the example gateway (`deploy/nginx/`) to the service:
 * nginx passes the client's W3C `traceparent` on unchanged, while the request keeps the
 * gateway's own `X-Request-Id`. The spans under the request: `test/app/tracing.test.ts`.
 *
 * @module
 */
import { join } from 'node:path'
import t from 'tap'
import { JSON_HEADERS, TOKEN } from '../helpers/app.js'
import { startGateway } from '../helpers/nginx.js'
import { only, startCollector, traceparent } from '../helpers/otlp-collector.js'
import { postPlant } from '../helpers/post-plant.js'
import { completedLogLine, startService } from '../helpers/process.js'

t.test("a create through the gateway is one trace: the client's traceparent reaches the service, the request id is the gateway's", async (t) => {
  const collector = await startCollector(t)
  // OTEL_BSP_SCHEDULE_DELAY: the SDK's export delay (default 5 s), short for the test.
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '100' }
  const service = await startService(t, { PLANT_STORE_TOKENS: TOKEN, DATA_DIR: join(t.testdir(), 'data'), NODE_ENV: 'test', TRUST_PROXY: '127.0.0.1', ...otel })
  const gateway = await startGateway(t, { upstreams: [new URL(service.url).host] })
  const client = traceparent()
  const response = await postPlant(gateway.url, { id: 42, name: 'Monstera deliciosa', tag: 'indoor' }, { ca: gateway.ca, headers: { ...JSON_HEADERS, traceparent: client.header } })
  t.equal(response.statusCode, 200)
  const requestId = String(response.headers['x-request-id'])
  t.match(requestId, /^[0-9a-f]{32}$/, "the gateway's request id")

  const inTrace = (spans: typeof collector.spans) => spans.filter((span) => span.traceId === client.traceId)
  const spans = inTrace(await collector.waitFor((spans) => inTrace(spans).length >= 3))
  t.equal(spans.length, 3, "every span (request, handler, store transaction) in the client's trace")
  const request = only(t, spans, 'POST /plants')
  t.equal(request.parentSpanId, client.spanId, "the request's parent is the client's span: nginx passed traceparent through unchanged")
  t.match(request.attributes, { 'http.route': '/plants', 'url.path': '/plants', 'http.response.status_code': 200 })
  t.match(await completedLogLine(service, requestId), { requestId, traceId: client.traceId }, "the service logs the gateway's request id with the client's trace id")
  t.match(await gateway.accessEntry(requestId), { status: 200 }, 'and the gateway logs the same request id')
})
