/** Tracing in the app: a create's spans in the caller's trace, as a collector receives them; other requests. */
import t from 'tap'
import { build, dropPlantTable, freshStore, JSON_HEADERS, TEST_DATABASE_URL } from '../helpers/app.ts'
import { only, startCollector, traceparent } from '../helpers/otlp-collector.ts'
import { postPlant } from '../helpers/post-plant.ts'

const dialect = TEST_DATABASE_URL === undefined ? 'sqlite' : 'postgresql'
const traced = (parent: { header: string }) => ({ headers: { ...JSON_HEADERS, traceparent: parent.header } })

t.test(
  "a create continues the caller's trace: request, createPlant, store transaction, each under the last",
  async (t) => {
    const collector = await startCollector(t)
    const app = await build(t, { otelExporterOtlpEndpoint: collector.url })
    const parent = traceparent()
    t.equal((await postPlant(app, { id: 1, name: 'Ficus' }, traced(parent))).statusCode, 200)
    await app.close()

    const spans = collector.spans.filter((span) => span.traceId === parent.traceId)
    t.equal(spans.length, 3, "three spans, in the caller's trace")
    const request = only(t, spans, 'POST /plants')
    t.match(request, {
      parentSpanId: parent.spanId,
      kind: 'SPAN_KIND_SERVER',
      attributes: { 'http.route': '/plants', 'http.request.method': 'POST', 'http.response.status_code': 200 },
    })
    const handler = only(t, spans, 'createPlant')
    t.equal(handler.parentSpanId, request.spanId, 'the handler is a child of the request')
    t.match(only(t, spans, 'store transaction'), {
      parentSpanId: handler.spanId,
      kind: 'SPAN_KIND_CLIENT',
      attributes: { 'db.system.name': dialect, 'db.operation.batch.size': 1 },
      service: 'plant-store',
    })
    t.match(collector.requests, [{ path: '/v1/traces', contentType: 'application/x-protobuf' }])
    t.equal(collector.requests.length, 1, 'exported once, to <endpoint>/v1/traces')
  },
)

t.test(
  'without a traceparent a trace of its own; a failed transaction is an error span; the 404 traced, probes not',
  async (t) => {
    const collector = await startCollector(t)
    const store = await freshStore(t)
    const app = await build(t, { ...store, otelExporterOtlpEndpoint: `${collector.url}/` })
    t.equal((await postPlant(app, { id: 1, name: 'Ficus' })).statusCode, 200)
    await dropPlantTable(store)
    const parent = traceparent()
    t.equal((await postPlant(app, { id: 2, name: 'Ficus' }, traced(parent))).statusCode, 500)
    const get = async (url: string) =>
      (await app.inject({ url, headers: { traceparent: traceparent().header } })).statusCode
    t.same(
      [await get('/nowhere?access_token=s3cret&s3cret'), await get('/health/live'), await get('/metrics')],
      [404, 200, 200],
    )
    await app.close()

    const root = collector.spans.find((span) => span.name === 'POST /plants' && span.parentSpanId === '')
    t.ok(root, 'a request without a traceparent is a root span')
    const inRootTrace = collector.spans.filter((span) => span.traceId === root?.traceId).map((span) => span.name)
    t.ok(inRootTrace.includes('store transaction'), 'its transaction in its trace')
    const failed = collector.spans.filter((span) => span.traceId === parent.traceId)
    t.match(only(t, failed, 'store transaction').status, { code: 'STATUS_CODE_ERROR', message: /plant/ })
    t.match(only(t, failed, 'POST /plants'), {
      status: { code: 'STATUS_CODE_ERROR' },
      attributes: { 'http.response.status_code': 500 },
    })
    t.match(only(t, collector.spans, 'GET'), {
      attributes: {
        'http.response.status_code': 404,
        'url.path': '/nowhere',
        'url.query': 'access_token=[redacted]&[redacted]',
      },
    })
    t.notMatch(JSON.stringify(collector.spans), /s3cret/, 'no query value in any span')
    const probes = collector.spans.filter((span) =>
      /health|metrics/.test(`${span.name} ${span.attributes['url.path']}`),
    )
    t.same(probes, [], 'no span for probes or metrics')
  },
)
