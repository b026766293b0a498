/**
 * A careless or hostile client over raw sockets: it cuts the connection at each phase of
 * an exchange, for each kind of request, alternately closing (FIN) and resetting (RST).
 * Used directly against a service process and through the nginx gateway.
 *
 * @module
 */
import type { Socket } from 'node:net'
import { open, requestHead, type Target } from './raw-http.js'

/** Where in an exchange the connection is cut. */
export const PHASES = ['in the request line', 'after the headers', 'in the body', 'after the body, before the answer', 'after the first byte of the answer'] as const

export type Phase = (typeof PHASES)[number]

/** A request as bytes: its head (ending in the blank line) and its body. */
interface RequestShape {
  readonly name: string
  readonly head: string
  readonly body: string
}

function shape(name: string, method: string, path: string, headers: Record<string, string>, body = ''): RequestShape {
  const length = body === '' ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`
  return { name, head: `${requestHead(method, path, headers)}${length}\r\n`, body }
}

/** The kinds of request each phase is tried with; `token` is a valid bearer token. */
export function requestShapes(token: string, prefix = ''): RequestShape[] {
  const json = { 'Content-Type': 'application/json' }
  const plant = '{"id":424242,"name":"Aborted Ficus"}'
  const create = shape('a valid create', 'POST', `${prefix}/plants`, { ...json, Authorization: `Bearer ${token}` }, plant)
  return [
    shape('the docs', 'GET', `${prefix}/docs/json`, {}),
    shape('an unknown path', 'GET', `${prefix}/nothing`, {}),
    shape('no token', 'POST', `${prefix}/plants`, json, plant),
    shape('a wrong token', 'POST', `${prefix}/plants`, { ...json, Authorization: `Bearer ${'w'.repeat(20)}${'x'.repeat(20)}` }, plant),
    create,
    // The second request follows the first in the same write.
    { name: 'a pipelined pair', head: `${create.head}${create.body}${create.head}`, body: create.body },
    shape('Expect: 100-continue', 'POST', `${prefix}/plants`, { ...json, Authorization: `Bearer ${token}`, Expect: '100-continue' }, plant),
  ]
}

/** What the server sent before the cut: the status lines seen, for checks on them. */
export interface CutExchange {
  readonly shape: string
  readonly phase: Phase
  readonly received: string
}

/** One exchange cut at `phase`; resolves once the socket is closed. */
async function cutAt(target: Target, request: RequestShape, phase: Phase, reset: boolean): Promise<CutExchange> {
  const socket = open(target)
  let received = ''
  const tls = target.url.startsWith('https:')
  // A reset needs the TCP handle, which TLS wraps: over TLS the cut is a close.
  const cut = (): void => {
    if (reset && !tls) socket.resetAndDestroy()
    else socket.destroy()
  }
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  socket.on('error', () => {})
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1')
    if (phase === 'after the first byte of the answer') cut()
  })
  socket.once(tls ? 'secureConnect' : 'connect', () => writeUntil(socket, request, phase, cut))
  // A server that never answers a cut request must not hold the test.
  const guard = setTimeout(cut, 5_000)
  await closed
  clearTimeout(guard)
  return { shape: request.name, phase, received }
}

function writeUntil(socket: Socket, { head, body }: RequestShape, phase: Phase, cut: () => void): void {
  switch (phase) {
    case 'in the request line':
      socket.write(head.slice(0, Math.max(1, head.indexOf('\r\n') >> 1)))
      return cut()
    case 'after the headers':
      socket.write(head)
      return cut()
    case 'in the body':
      socket.write(head + body.slice(0, body.length >> 1))
      return cut()
    case 'after the body, before the answer':
      socket.write(head + body)
      return cut()
    case 'after the first byte of the answer':
      socket.write(head + body)
  }
}

/**
 * Runs `rounds` × every shape × every {@link PHASES} cut against `target`, `concurrency` at a time.
 * @returns every exchange, with what the server sent before the cut.
 */
export async function cutEveryPhase(target: Target, token: string, { rounds, concurrency, prefix }: { rounds: number; concurrency: number; prefix?: string }): Promise<CutExchange[]> {
  const work: Array<() => Promise<CutExchange>> = []
  for (let round = 0; round < rounds; round++) {
    for (const request of requestShapes(token, prefix)) for (const phase of PHASES) work.push(() => cutAt(target, request, phase, (round + work.length) % 2 === 0))
  }
  const results: CutExchange[] = []
  const worker = async (): Promise<void> => {
    for (let next = work.shift(); next !== undefined; next = work.shift()) results.push(await next())
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return results
}

/** The status codes of every response that began before a cut (`HTTP/1.1 NNN`), e.g. to find a 5xx. */
export function statusesSeen(exchanges: readonly CutExchange[]): number[] {
  return exchanges.flatMap(({ received }) => [...received.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((match) => Number(match[1])))
}
