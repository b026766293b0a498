/**
 * Raw HTTP/1.1 over a socket, for requests no client would send (malformed, partial,
 * broken chunked bodies): writes the bytes as given and reads the one response.
 *
 * @module
 */
import { once } from 'node:events'
import { connect as connectTcp, type Socket } from 'node:net'
import { connect as connectTls } from 'node:tls'

/** One HTTP response as read from the socket. */
export interface RawResponse {
  statusCode: number
  /** Lower-case names; a repeated header keeps its last value. */
  headers: Record<string, string>
  body: string
  /** Milliseconds from connecting to the end of the response. */
  elapsedMs: number
}

/** Where to connect: `http(s)://host:port`, the PEM to trust for https, the local address to connect from. */
export interface Target {
  url: string
  ca?: string
  localAddress?: string
}

/**
 * Writes `request` (each string part a separate write) and resolves with the first
 * complete response (by `Content-Length`, chunked end, or close).
 * @throws when the connection closes first, or after `timeoutMs`.
 */
export async function exchange(target: Target, request: string | string[], timeoutMs = 15_000): Promise<RawResponse> {
  const socket = open(target)
  try {
    return await new Promise<RawResponse>((resolve, reject) => {
      const started = Date.now()
      let received = Buffer.alloc(0)
      const timer = setTimeout(
        () =>
          reject(
            new Error(`no complete response within ${timeoutMs} ms: ${JSON.stringify(received.toString('latin1'))}`),
          ),
        timeoutMs,
      )
      const finish = (closed: boolean): void => {
        const response = parse(received, closed)
        if (response === undefined) {
          if (closed)
            reject(
              new Error(
                `the connection closed without a complete response: ${JSON.stringify(received.toString('latin1'))}`,
              ),
            )
          return
        }
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
export function headerLines(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
}

/** A request head up to its last header line (`Host: localhost`, then `headers`), without the closing blank line. */
export function requestHead(method: string, path: string, headers: Record<string, string> = {}): string {
  return `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n${headerLines(headers)}`
}

/** A whole request with `Connection: close`; with `body`, its `Content-Length`. */
export function wholeRequest(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): string {
  const length = body === undefined ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`
  return `${requestHead(method, path, headers)}${length}Connection: close\r\n\r\n${body ?? ''}`
}

/** Opens a TCP or TLS (ALPN http/1.1) connection to `target`. */
export function open(target: Target): Socket {
  const { hostname, port, protocol } = new URL(target.url)
  const tcp = connectTcp({
    host: hostname.replace(/^\[|\]$/g, ''),
    port: Number(port),
    localAddress: target.localAddress,
  })
  if (protocol !== 'https:') return tcp
  return connectTls({ socket: tcp, ca: target.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] })
}

/** {@link open}, resolved once connected (over TLS, once secure). */
export async function connected(target: Target): Promise<Socket> {
  const socket = open(target)
  await once(socket, target.url.startsWith('https:') ? 'secureConnect' : 'connect')
  return socket
}

/** A complete response in `data`, or `undefined` while more is to come. */
function parse(data: Buffer, closed: boolean): Omit<RawResponse, 'elapsedMs'> | undefined {
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
function dechunk(data: Buffer): string | undefined {
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
