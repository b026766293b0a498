/** A hostile client: it cuts the connection at each phase of each kind of exchange, by FIN and RST in turn. */
import { open, requestHead, type Target } from './raw-http.ts'

/** Where in an exchange the connection is cut. */
export const PHASES = [
  'in the request line',
  'after the headers',
  'in the body',
  'after the body, before the answer',
  'after the first byte of the answer',
] as const

export type Phase = (typeof PHASES)[number]

type RequestShape = { name: string; head: string; body: string }

function shape(name: string, method: string, path: string, headers: Record<string, string>, body = ''): RequestShape {
  const length = body === '' ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`
  return { name, head: `${requestHead(method, path, headers)}${length}\r\n`, body }
}

/** The wrong bearer token the shapes send. */
export const WRONG_TOKEN = `${'w'.repeat(20)}${'x'.repeat(20)}`

/** The requests each phase is tried with; `prefix`: a gateway's path prefix. */
export function requestShapes(token: string, prefix = ''): RequestShape[] {
  const json = { 'Content-Type': 'application/json' }
  const authorized = { ...json, Authorization: `Bearer ${token}` }
  const post = (name: string, headers: Record<string, string>) =>
    shape(name, 'POST', `${prefix}/plants`, headers, '{"id":424242,"name":"Aborted Ficus"}')
  const create = post('a valid create', authorized)
  return [
    shape('the docs', 'GET', `${prefix}/docs/json`, {}),
    shape('an unknown path', 'GET', `${prefix}/nothing`, {}),
    post('no token', json),
    post('a wrong token', { ...json, Authorization: `Bearer ${WRONG_TOKEN}` }),
    create,
    { name: 'a pipelined pair', head: `${create.head}${create.body}${create.head}`, body: create.body },
    post('Expect: 100-continue', { ...authorized, Expect: '100-continue' }),
  ]
}

/** One exchange cut at `phase`; resolves once the socket is closed (5 s at most). */
async function cutAt(target: Target, { head, body }: RequestShape, phase: Phase, reset: boolean) {
  const socket = open(target)
  const tls = target.url.startsWith('https:')
  // A reset needs the TCP handle, which TLS wraps: over TLS the cut is a close.
  const cut = (): void => void (reset && !tls ? socket.resetAndDestroy() : socket.destroy())
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  socket.on('error', () => {})
  socket.on('data', () => phase === PHASES[4] && cut())
  socket.once(tls ? 'secureConnect' : 'connect', () => {
    const sent = [head.slice(0, Math.max(1, head.indexOf('\r\n') >> 1)), head, head + body.slice(0, body.length >> 1)]
    socket.write(sent[PHASES.indexOf(phase)] ?? head + body)
    if (phase !== PHASES[4]) cut()
  })
  const guard = setTimeout(cut, 5_000)
  await closed
  clearTimeout(guard)
}

/** `rounds` × every shape × every phase against `target`, `concurrency` at a time. @returns each cut. */
export async function cutEveryPhase(
  target: Target,
  token: string,
  { rounds, concurrency, prefix }: { rounds: number; concurrency: number; prefix?: string },
): Promise<Array<{ shape: string; phase: Phase }>> {
  const work: Array<() => Promise<{ shape: string; phase: Phase }>> = []
  for (let round = 0; round < rounds; round++)
    for (const request of requestShapes(token, prefix))
      for (const phase of PHASES) {
        const reset = (round + work.length) % 2 === 0
        work.push(() => cutAt(target, request, phase, reset).then(() => ({ shape: request.name, phase })))
      }
  const done: Array<{ shape: string; phase: Phase }> = []
  const worker = async (): Promise<void> => {
    for (let next = work.shift(); next !== undefined; next = work.shift()) done.push(await next())
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return done
}
