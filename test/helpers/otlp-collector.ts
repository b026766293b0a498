/**
 * A trace collector: receives OTLP/HTTP exports (`POST /v1/traces`, protobuf) and decodes
 * them with the official definitions (`test/fixtures/opentelemetry-proto`).
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import protobuf from 'protobufjs'
import type { Test } from 'tap'
import type { TestContext } from './app.ts'

/** The OTLP definitions, unchanged from opentelemetry-proto. */
const PROTO_DIR = fileURLToPath(new URL('../fixtures/opentelemetry-proto/', import.meta.url))

const root = new protobuf.Root()
root.resolvePath = (_origin, target) => PROTO_DIR + target
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto')
const ExportTraceServiceRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest')

/** An attribute value: OTLP's `AnyValue` of a string, integer, double or boolean. */
type AttributeValue = string | number | boolean

/**
 * One span as exported: ids in lower-case hex (as in `traceparent`), `parentSpanId` empty
 * for a root span; `kind` and `status.code` as OTLP names them (`SPAN_KIND_SERVER`,
 * `STATUS_CODE_ERROR` …); `service` the resource's `service.name`.
 */
export interface ExportedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  readonly kind: string
  readonly attributes: Readonly<Record<string, AttributeValue>>
  readonly status: { readonly code: string; readonly message: string }
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly service: string
}

/**
 * A running collector: its URL (`OTEL_EXPORTER_OTLP_ENDPOINT`), the spans and export
 * requests received, in order; `waitFor` resolves once `done(spans)` holds, or throws after 60 s.
 */
export interface Collector {
  readonly url: string
  readonly spans: ExportedSpan[]
  readonly requests: Array<{ readonly path: string; readonly contentType: string }>
  waitFor(done: (spans: ExportedSpan[]) => boolean): Promise<ExportedSpan[]>
}

/** Starts a {@link Collector} on a free loopback port; closed at teardown. */
export async function startCollector(t: TestContext): Promise<Collector> {
  const spans: ExportedSpan[] = []
  const requests: Array<{ path: string; contentType: string }> = []
  const server = createServer(async (request, response) => {
    requests.push({ path: request.url!, contentType: request.headers['content-type'] ?? '' })
    spans.push(...decode(Buffer.concat(await request.toArray())))
    // An empty ExportTraceServiceResponse: everything accepted.
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  const { port } = server.address() as { port: number }
  const waitFor = async (done: (spans: ExportedSpan[]) => boolean) => {
    for (const deadline = Date.now() + 60_000; !done(spans); await new Promise((resolve) => setTimeout(resolve, 50))) {
      if (Date.now() > deadline)
        throw new Error(`the spans expected did not come within 60 s; received:\n${JSON.stringify(spans, null, 2)}`)
    }
    return spans
  }
  return { url: `http://127.0.0.1:${port}`, spans, requests, waitFor }
}

/** Decoded OTLP, as protobufjs's `toObject` gives it (bytes as Buffers, enums as names). */
interface Decoded {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] }
    scopeSpans?: Array<{
      spans?: Array<
        Record<string, unknown> & { attributes?: KeyValue[]; links?: Array<{ traceId: Buffer; spanId: Buffer }> }
      >
    }>
  }>
}
interface KeyValue {
  key: string
  value: { stringValue?: string; intValue?: string; doubleValue?: number; boolValue?: boolean }
}

/** The spans of one `ExportTraceServiceRequest` body. */
function decode(body: Buffer): ExportedSpan[] {
  const message = ExportTraceServiceRequest.decode(body)
  const decoded = ExportTraceServiceRequest.toObject(message, {
    enums: String,
    longs: String,
    defaults: true,
  }) as Decoded
  const hex = (bytes: unknown) => Buffer.from(bytes as Uint8Array).toString('hex')
  return (decoded.resourceSpans ?? []).flatMap(({ resource, scopeSpans }) => {
    const service = String(attributesOf(resource?.attributes)['service.name'])
    return (scopeSpans ?? []).flatMap(({ spans = [] }) =>
      spans.map((span) => ({
        traceId: hex(span.traceId),
        spanId: hex(span.spanId),
        parentSpanId: hex(span.parentSpanId),
        name: span.name as string,
        kind: span.kind as string,
        attributes: attributesOf(span.attributes),
        status: span.status as ExportedSpan['status'],
        links: (span.links ?? []).map((link) => ({ traceId: hex(link.traceId), spanId: hex(link.spanId) })),
        service,
      })),
    )
  })
}

/** OTLP's key-value list as an object; integers as numbers. */
function attributesOf(list: KeyValue[] = []): Record<string, AttributeValue> {
  return Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.stringValue ??
        (value.intValue === undefined ? undefined : Number(value.intValue)) ??
        value.doubleValue ??
        value.boolValue!,
    ]),
  )
}

/** A W3C `traceparent` of a new, sampled trace: the header's value and its ids. */
export function traceparent(): { header: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString('hex')
  const spanId = randomBytes(8).toString('hex')
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId }
}

/** The one span named `name` among `spans` (asserted). */
export function only(t: Test, spans: readonly ExportedSpan[], name: string): ExportedSpan {
  const found = spans.filter((span) => span.name === name)
  t.equal(found.length, 1, `one ${name} span`)
  return found[0]!
}
