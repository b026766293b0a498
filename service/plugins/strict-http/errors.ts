/** Any failure as its status, headers and message: one mapping for the handler and the socket. @module */
import { STATUS_CODES } from 'node:http'

/** Builds the error body from the status and the message; the default is Fastify's own shape. */
export type ErrorBody = (statusCode: number, message: string) => unknown

/** Fastify's own error shape: `{ statusCode, error: <reason phrase>, message }`. */
export const defaultErrorBody: ErrorBody = (statusCode, message) => ({
  statusCode,
  error: STATUS_CODES[statusCode],
  message,
})

/** What the client gets; `internal` failures are logged with their cause, which the client never sees. */
export interface ErrorResponse {
  statusCode: number
  headers: Readonly<Record<string, string>>
  message: string
  internal: boolean
}

/** The answer to CONNECT (RFC 9110 §9.3.6). */
export const CONNECT_REFUSED = 'Bad Request: CONNECT asks for a tunnel, which the service does not open'

/** The answer to an HTTP/1.1 request without `Host`. */
export const HOST_REQUIRED = 'Bad Request: an HTTP/1.1 request needs a Host header (RFC 9112 §3.2)'

/** Node's own rejections by error code, statuses as in Node's lib/_http_server.js; any other `HPE_*` is 400. */
const CLIENT_ERRORS: ReadonlyMap<string, { statusCode: number; message: string }> = new Map([
  ['ERR_HTTP_REQUEST_TIMEOUT', { statusCode: 408, message: 'Request Timeout: the request was not received in time' }],
  ['HPE_HEADER_OVERFLOW', { statusCode: 431, message: 'Request Header Fields Too Large' }],
  ['HPE_CHUNK_EXTENSIONS_OVERFLOW', { statusCode: 413, message: 'Request chunk extensions are too large' }],
])

/** An unknown method (RFC 9112 §3): 400, not 501, as client input never gets a 5xx. */
const UNKNOWN_METHOD = { statusCode: 400, message: 'Bad Request: the request method is not one the service knows' }
const requestLine = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \r\n]+ HTTP\/\d\.\d\r?\n/
const MALFORMED = { statusCode: 400, message: 'Bad Request: the request is not valid HTTP/1.1' }

interface Described {
  code?: unknown
  rawPacket?: unknown
  bytesParsed?: unknown
  statusCode?: unknown
  status?: unknown
  expose?: unknown
  headers?: unknown
  message?: unknown
}

/** From the start of the line Node's parser stopped in (the packet may begin with requests that came before). */
function failedLine({ rawPacket, bytesParsed }: Described): string {
  if (!Buffer.isBuffer(rawPacket)) return ''
  const stop = typeof bytesParsed === 'number' ? bytesParsed : 0
  return `${rawPacket.subarray(rawPacket.subarray(0, stop).lastIndexOf('\n') + 1)}`
}

function clientError(error: Described): { statusCode: number; message: string } | undefined {
  const code = error.code
  if (typeof code !== 'string') return undefined
  if (code === 'HPE_INVALID_METHOD') return requestLine.test(failedLine(error)) ? UNKNOWN_METHOD : MALFORMED
  return CLIENT_ERRORS.get(code) ?? (code.startsWith('HPE_') ? MALFORMED : undefined)
}

function stringHeaders(headers: unknown): Record<string, string> {
  if (typeof headers !== 'object' || headers === null) return {}
  return Object.fromEntries(Object.entries(headers).filter((entry) => typeof entry[1] === 'string'))
}

/**
 * Node's parser errors by code; an error with a `statusCode` (or `status`) of 400–499, or of 500–599 with
 * `expose: true` (the http-errors convention), as that status with its message and its string `headers`;
 * anything else is a 500 whose cause is only logged.
 */
export function toErrorResponse(error: unknown): ErrorResponse {
  const described: Described = typeof error === 'object' && error !== null ? error : {}
  const fromParser = clientError(described)
  if (fromParser !== undefined) return { ...fromParser, headers: {}, internal: false }
  const statusCode = described.statusCode ?? described.status
  if (
    typeof statusCode === 'number' &&
    statusCode >= 400 &&
    (statusCode < 500 || (statusCode < 600 && described.expose === true))
  ) {
    const message = typeof described.message === 'string' ? described.message : `${STATUS_CODES[statusCode]}`
    return { statusCode, headers: stringHeaders(described.headers), message, internal: false }
  }
  return { statusCode: 500, headers: {}, message: 'Internal Server Error', internal: true }
}
