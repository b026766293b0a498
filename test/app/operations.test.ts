/** Behind a gateway: probes, metrics, request ids, draining, trusted proxies (outside the public contract). */
import t from 'tap'
import { build, JSON_HEADERS, logSink } from '../helpers/app.ts'
import { postPlant } from '../helpers/post-plant.ts'

// The served document is openapi.yaml, which has no /health path: docs.test.ts.
t.test('liveness and readiness answer 200 with no token', async (t) => {
  const app = await build(t)
  for (const status of ['live', 'ready']) {
    const probe = await app.inject({ url: `/health/${status}` })
    t.same([probe.statusCode, probe.json()], [200, { status }])
  }
})

t.test(
  'draining: readiness is 503 with the Error body and Retry-After; requests still served, closing their connection',
  async (t) => {
    const app = await build(t)
    app.startDraining()
    const ready = await app.inject({ url: '/health/ready' })
    t.match(ready, { statusCode: 503, headers: { 'retry-after': '1' } })
    t.same(ready.json(), { error: 503, message: 'The service is shutting down' })
    t.match(await postPlant(app, { id: 1, name: 'Ficus' }), { statusCode: 200, headers: { connection: 'close' } })
  },
)

t.test('metrics: requests by route and status, outcomes, store latency, process metrics; no plant data', async (t) => {
  const app = await build(t)
  for (const name of ['Secret Orchid', 'Secret Orchid', 'Other Orchid']) await postPlant(app, { id: 1, name })
  await app.inject({ url: '/nowhere' })
  const metrics = await app.inject({ url: '/metrics' })
  t.match(metrics, { statusCode: 200, headers: { 'content-type': /^text\/plain; version=0\.0\.4/ } })
  const text = metrics.body
  const requests = (method: string, route: string, status: number, count: number) =>
    `http_request_duration_seconds_count{method="${method}",route="${route}",status_code="${status}"} ${count}`
  for (const series of [
    requests('POST', '/plants', 200, 2),
    requests('POST', '/plants', 409, 1),
    requests('GET', 'unmatched', 404, 1),
    ...['created', 'replayed', 'conflict'].map((outcome) => `plant_store_creates_total{outcome="${outcome}"} 1`),
    'plant_store_store_transaction_seconds_count{result="ok"} 3',
    'plant_store_group_commit_batch_size_count 3',
    'process_cpu_user_seconds_total',
    'nodejs_eventloop_lag_seconds',
  ])
    t.ok(text.includes(series), series)
  t.notMatch(text, /Orchid/, 'no plant data')
})

t.test(
  'a well-formed X-Request-Id is kept, returned and on each log line of its request; else a new UUID',
  async (t) => {
    const { logger, lines } = logSink()
    const app = await build(t, {}, logger)
    const id = 'gateway-42.a:b'
    const response = await postPlant(app, { id: 1, name: 5 }, { headers: { ...JSON_HEADERS, 'x-request-id': id } })
    t.equal(response.headers['x-request-id'], id)
    const ofRequest = lines.filter((line) => line.requestId === id)
    t.same(
      ofRequest.map((line) => line.msg),
      ['request rejected', 'request completed'],
      'the rejection as it happens, then one line with its status and duration',
    )
    t.match(ofRequest[1], { req: { method: 'POST', url: '/plants' }, res: { statusCode: 400 }, responseTime: Number })
    const ofSomeRequest = (line: Record<string, unknown>) => line.req !== undefined || line.res !== undefined
    t.same(lines.filter(ofSomeRequest), ofRequest.filter(ofSomeRequest), 'no other line of a request')
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
    for (const id of [undefined, 'has spaces and "quotes"', 'x'.repeat(129)]) {
      const probe = await app.inject({ url: '/health/live', headers: id === undefined ? {} : { 'x-request-id': id } })
      t.match(probe.headers['x-request-id'], uuid)
    }
  },
)

t.test('X-Forwarded-For is believed only from the addresses TRUST_PROXY lists', async (t) => {
  for (const [trustProxy, expected] of [
    [['127.0.0.1'], '203.0.113.7'],
    [['10.0.0.0/8'], '127.0.0.1'],
  ] as const) {
    const { logger, lines } = logSink()
    const app = await build(t, { trustProxy: [...trustProxy] }, logger)
    await app.inject({ url: '/nowhere', headers: { 'x-forwarded-for': '203.0.113.7' } })
    const incoming = lines.find((line) => line.msg === 'request completed') as { req: { remoteAddress: string } }
    t.equal(incoming.req.remoteAddress, expected, `trustProxy ${JSON.stringify(trustProxy)}`)
  }
})
