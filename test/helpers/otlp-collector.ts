/** A trace collector: OTLP/HTTP decoded with the official definitions (`test/fixtures/opentelemetry-proto`). */
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import protobuf from 'protobufjs'
import type { Test } from 'tap'
import type { TestContext } from './app.ts'
import { waitUntil } from './podman.ts'

const root = new protobuf.Root()
root.resolvePath = (_origin, target) =>
  fileURLToPath(new URL(`../fixtures/opentelemetry-proto/${target}`, import.meta.url))
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto')
const ExportTraceServiceRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest')

/** One span as exported: ids in hex (`parentSpanId` empty for a root), enums as OTLP names them. */
export interface ExportedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  readonly kind: string
  readonly attributes: Readonly<Record<string, string | number | boolean>>
  readonly status: { code: string; message: string }
  readonly links: ReadonlyArray<{ traceId: string; spanId: string }>
  readonly service: string
}

/** A collector, closed at teardown: its URL, spans and requests received; `waitFor` until `done(spans)`. */
export async function startCollector(t: TestContext) {
  const spans: ExportedSpan[] = []
  const requests: Array<{ path: string; contentType: string }> = []
  const server = createServer(async (request, response) => {
    requests.push({ path: request.url!, contentType: request.headers['content-type'] ?? '' })
    spans.push(...decode(Buffer.concat(await request.toArray())))
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  })
  await once(server.listen(0, '127.0.0.1'), 'listening')
  t.teardown(() => void server.close().closeAllConnections())
  const waitFor = async (done: (spans: ExportedSpan[]) => boolean) => {
    await waitUntil('the spans expected', 60_000, async () => done(spans)).catch((error: Error) => {
      throw new Error(`${error.message}; received:\n${JSON.stringify(spans, null, 2)}`)
    })
    return spans
  }
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, spans, requests, waitFor }
}

type KeyValue = {
  key: string
  value: { stringValue?: string; intValue?: string; doubleValue?: number; boolValue?: boolean }
}
type Span = Omit<ExportedSpan, 'traceId' | 'spanId' | 'parentSpanId' | 'attributes' | 'links'> &
  Record<'traceId' | 'spanId' | 'parentSpanId', Buffer> & {
    attributes: KeyValue[]
    links: Array<Record<'traceId' | 'spanId', Buffer>>
  }
type Decoded = { resourceSpans: Array<{ resource?: { attributes: KeyValue[] }; scopeSpans: Array<{ spans: Span[] }> }> }

function decode(body: Buffer): ExportedSpan[] {
  const message = ExportTraceServiceRequest.decode(body)
  const decoded = ExportTraceServiceRequest.toObject(message, {
    enums: String,
    longs: String,
    defaults: true,
  }) as Decoded
  const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
  return decoded.resourceSpans.flatMap(({ resource, scopeSpans }) =>
    scopeSpans.flatMap(({ spans }) =>
      spans.map((span) => ({
        name: span.name,
        kind: span.kind,
        status: span.status,
        traceId: hex(span.traceId),
        spanId: hex(span.spanId),
        parentSpanId: hex(span.parentSpanId),
        attributes: attributesOf(span.attributes),
        links: span.links.map((link) => ({ traceId: hex(link.traceId), spanId: hex(link.spanId) })),
        service: String(attributesOf(resource?.attributes)['service.name']),
      })),
    ),
  )
}

/** OTLP's key-value list as an object; integers as numbers. */
function attributesOf(list: KeyValue[] = []) {
  return Object.fromEntries(
    list.map(({ key, value: v }) => [
      key,
      v.stringValue ?? (v.intValue && Number(v.intValue)) ?? v.doubleValue ?? v.boolValue!,
    ]),
  )
}

/** A W3C `traceparent` of a new, sampled trace: the header's value and its ids. */
export function traceparent() {
  const [traceId, spanId] = [randomBytes(16).toString('hex'), randomBytes(8).toString('hex')]
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId }
}

/** The one span named `name` among `spans` (asserted). */
export function only(t: Test, spans: readonly ExportedSpan[], name: string) {
  const found = spans.filter((span) => span.name === name)
  t.equal(found.length, 1, `one ${name} span`)
  return found[0]!
}
