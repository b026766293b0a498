/** Raw HTTP/1.1 over a socket, for requests no client would send: the bytes as given, the one response read. */
import { once } from 'node:events'
import { connect as connectTcp, type Socket } from 'node:net'
import { connect as connectTls } from 'node:tls'
import type { TestContext } from './app.ts'

/** One HTTP response as read from the socket. */
export interface RawResponse {
  statusCode: number
  /** Lower-case names; a repeated header keeps its last value. */
  headers: Record<string, string>
  body: string
  /** Milliseconds from connecting to the end of the response. */
  elapsedMs: number
}

/** `http(s)://host:port`, the PEM to trust for https, the local address. */
export interface Target {
  url: string
  ca?: string
  localAddress?: string
}

/** Writes `request` (each part a write). @returns the first complete response. @throws on a close or `timeoutMs`. */
export async function exchange(target: Target, request: string | string[], timeoutMs = 15_000) {
  const socket = open(target)
  try {
    return await new Promise<RawResponse>((resolve, reject) => {
      const started = Date.now()
      let received = Buffer.alloc(0)
      const fail = (why: string) => reject(new Error(`${why}: ${JSON.stringify(received.toString('latin1'))}`))
      const timer = setTimeout(() => fail(`no complete response within ${timeoutMs} ms`), timeoutMs)
      const finish = (closed: boolean): void => {
        const response = parse(received, closed)
        if (response === undefined) return void (closed && fail('the connection closed without a complete response'))
        clearTimeout(timer)
        resolve({ ...response, elapsedMs: Date.now() - started })
      }
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk])
        finish(false)
      })
      socket.on('error', () => {}) // a reset after the response is no failure; 'close' follows
      socket.on('close', () => finish(true))
      socket.once(target.url.startsWith('https:') ? 'secureConnect' : 'connect', () => {
        for (const part of [request].flat()) socket.write(part)
      })
    })
  } finally {
    socket.destroy()
  }
}

/** `Name: value\r\n` for each header, in order. */
export function headerLines(headers: Record<string, string>) {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
}

/** A request head (`Host: localhost`, then `headers`) without the closing blank line. */
export function requestHead(method: string, path: string, headers: Record<string, string> = {}) {
  return `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n${headerLines(headers)}`
}

/** A whole request with `Connection: close`; with `body`, its `Content-Length`. */
export function wholeRequest(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const length = body === undefined ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`
  return `${requestHead(method, path, headers)}${length}Connection: close\r\n\r\n${body ?? ''}`
}

/** Opens a TCP or TLS (ALPN http/1.1) connection to `target`. */
export function open(target: Target) {
  const { hostname, port, protocol } = new URL(target.url)
  const tcp = connectTcp({
    host: hostname.replace(/^\[|\]$/g, ''),
    port: Number(port),
    localAddress: target.localAddress,
  })
  if (protocol !== 'https:') return tcp
  return connectTls({ socket: tcp, ca: target.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] })
}

/** {@link open}, resolved once connected (over TLS, once secure); with `t`, destroyed at teardown. */
export async function connected(target: Target, t?: TestContext) {
  const socket = open(target)
  t?.teardown(() => socket.destroy())
  await once(socket, target.url.startsWith('https:') ? 'secureConnect' : 'connect')
  return socket
}

/** Writes `request` (if any); gathers what comes until `done` says so, the socket closes, or 10 s pass. */
export async function gather(socket: Socket, request = '', done: (received: string) => boolean = () => false) {
  let received = ''
  let closed = socket.destroyed
  const settled = new Promise<void>((resolve) => {
    setTimeout(resolve, 10_000).unref()
    const check = () => (closed || done(received)) && resolve()
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      check()
    })
    socket.once('close', () => {
      closed = true
      check()
    })
  })
  if (request) socket.write(request)
  await settled
  return { received, closed }
}

/** A complete response in `data`, or `undefined` while more is to come. */
export function parse(data: Buffer, closed: boolean) {
  const end = data.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n')
  const statusCode = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1])
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const rest = data.subarray(end + 4)
  const length = headers['content-length']
  let body: string | undefined
  if (length !== undefined)
    body = rest.length < Number(length) ? undefined : rest.subarray(0, Number(length)).toString('utf8')
  else if (headers['transfer-encoding'] === 'chunked') body = dechunk(rest)
  else body = closed ? rest.toString('utf8') : undefined
  return body === undefined ? undefined : { statusCode, headers, body }
}

/** The body of a complete chunked message, or `undefined` while more is to come. */
function dechunk(data: Buffer) {
  const parts: Buffer[] = []
  for (let offset = 0; ;) {
    const lineEnd = data.indexOf('\r\n', offset)
    if (lineEnd < 0) return undefined
    const size = parseInt(data.subarray(offset, lineEnd).toString('latin1'), 16)
    if (size === 0) return Buffer.concat(parts).toString('utf8')
    if (data.length < lineEnd + 2 + size + 2) return undefined
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size))
    offset = lineEnd + 2 + size + 2
  }
}
