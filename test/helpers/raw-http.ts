/**
 * Raw HTTP/1.1 over a real socket, for requests no HTTP client would send
 * (malformed request lines, bad headers, broken chunked bodies, partial requests):
 * writes the bytes as given and reads the one response the server sends back. The
 * requests are built from {@link requestHead} on. A well-formed `POST /plants` is
 * sent with `postPlant` (`post-plant.ts`).
 *
 * @module
 */
import { connect as connectTcp, type Socket } from 'node:net'
import { connect as connectTls } from 'node:tls'

/** One HTTP response as read from the socket. */
export interface RawResponse {
  statusCode: number
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>
  body: string
  /** Milliseconds from connecting to the end of the response. */
  elapsedMs: number
}

/** Where and how to connect. */
export interface Target {
  /** `http://host:port` or `https://host:port`. */
  url: string
  /** For `https:`, the PEM certificate to trust (the test's self-signed one). */
  ca?: string
  /** The local address to connect from (any of 127.0.0.0/8 on loopback), to look like another client. */
  localAddress?: string
}

/**
 * Connects to `target`, writes `request` (string parts are sent as separate writes,
 * in order) and resolves with the first complete response: its length is known from
 * `Content-Length`, or the server closes the connection.
 *
 * @throws when the connection closes without a complete response, or no response
 *   arrives within `timeoutMs` (default 15 s).
 */
export async function exchange(target: Target, request: string | string[], timeoutMs = 15_000): Promise<RawResponse> {
  const socket = open(target)
  try {
    return await new Promise<RawResponse>((resolve, reject) => {
      const started = Date.now()
      let received = Buffer.alloc(0)
      const timer = setTimeout(() => reject(new Error(`no complete response within ${timeoutMs} ms: ${JSON.stringify(received.toString('latin1'))}`)), timeoutMs)
      const finish = (closed: boolean): void => {
        const response = parse(received, closed)
        if (response === undefined) {
          if (closed) reject(new Error(`the connection closed without a complete response: ${JSON.stringify(received.toString('latin1'))}`))
          return
        }
        clearTimeout(timer)
        resolve({ ...response, elapsedMs: Date.now() - started })
      }
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk])
        finish(false)
      })
      socket.on('error', () => {}) // a reset after the response is not a failure; 'close' follows
      socket.on('close', () => finish(true))
      socket.once(target.url.startsWith('https:') ? 'secureConnect' : 'connect', () => {
        for (const part of [request].flat()) socket.write(part)
      })
    })
  } finally {
    socket.destroy()
  }
}

/** Header lines of a request's head: `Name: value\r\n` each, in order. */
export function headerLines(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
}

/**
 * The head of an HTTP/1.1 request up to its last header line: the request line,
 * `Host: localhost`, then `headers`. The blank line that ends the head is not there:
 * the caller adds what the request under test needs (more headers, a malformed
 * one, a body) and ends it.
 */
export function requestHead(method: string, path: string, headers: Record<string, string> = {}): string {
  return `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n${headerLines(headers)}`
}

/** A whole request, one per connection (`Connection: close`); with `body`, its `Content-Length`. */
export function wholeRequest(method: string, path: string, headers: Record<string, string> = {}, body?: string): string {
  const length = body === undefined ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`
  return `${requestHead(method, path, headers)}${length}Connection: close\r\n\r\n${body ?? ''}`
}

/** Opens a TCP or TLS connection to `target` (HTTP/1.1 by ALPN). */
export function open(target: Target): Socket {
  const { hostname, port, protocol } = new URL(target.url)
  const host = hostname.replace(/^\[|\]$/g, '')
  const tcp = connectTcp({ host, port: Number(port), localAddress: target.localAddress })
  if (protocol !== 'https:') return tcp
  return connectTls({ socket: tcp, ca: target.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] })
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
  if (length !== undefined) {
    if (rest.length < Number(length)) return undefined
    return { statusCode, headers, body: rest.subarray(0, Number(length)).toString('utf8') }
  }
  if (headers['transfer-encoding'] === 'chunked') {
    const body = dechunk(rest)
    return body === undefined ? undefined : { statusCode, headers, body }
  }
  return closed ? { statusCode, headers, body: rest.toString('utf8') } : undefined
}

/** The body of a complete chunked message, or `undefined` while more is to come. */
function dechunk(data: Buffer): string | undefined {
  const parts: Buffer[] = []
  let offset = 0
  for (;;) {
    const lineEnd = data.indexOf('\r\n', offset)
    if (lineEnd < 0) return undefined
    const size = parseInt(data.subarray(offset, lineEnd).toString('latin1'), 16)
    if (size === 0) return Buffer.concat(parts).toString('utf8')
    if (data.length < lineEnd + 2 + size + 2) return undefined
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size))
    offset = lineEnd + 2 + size + 2
  }
}
