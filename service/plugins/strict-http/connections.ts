/**
 * Each connection's exchanges, seen through Node's public events only (the server's `connection` and `request`,
 * the response's `close`): a bound on the answers a connection may owe, room for a new client at the cap, and
 * an error answered after the answers ahead of it.
 *
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** The limits each connection is held to. */
export interface ConnectionLimits {
  /** Most open connections (`server.maxConnections`); at the cap the longest idle one is closed for a newcomer. */
  maxConnections: number
  /** Most requests a connection may have unanswered; past it the connection is closed at once. */
  maxPipelined: number
  /** Most milliseconds an error's answer waits for the answers ahead of it before the connection is destroyed. */
  lingerMs: number
}

interface Exchange {
  readonly request: IncomingMessage
  readonly response: ServerResponse
}

interface Connection {
  readonly socket: Socket
  /** Handed to the application, not yet closed, in order. */
  readonly inFlight: Exchange[]
  /** Nothing more is handled: after an error, or past `maxPipelined`. */
  closing: boolean
  /** The error to answer once the answers ahead of it are written. */
  failure?: Error
  /** The exchange whose body the error is in, if it was still arriving. */
  failed?: Exchange
  linger?: NodeJS.Timeout
  /** Its neighbours in the idle list (served, nothing owed), if it is on it. */
  olderIdle: Connection | undefined
  newerIdle: Connection | undefined
}

/** Writes the error's answer (status line to body) on `socket`. */
export type AnswerError = (socket: Socket, error: Error) => void

/**
 * Puts `server`'s `request` listeners (Fastify's handler) behind a gate that counts each connection's exchanges.
 * @returns `fail`: the answer to a request that never reached a route (Node's parser rejected it, CONNECT).
 */
export function guardConnections(
  server: Server,
  limits: ConnectionLimits,
  answer: AnswerError,
): (error: Error, socket: Socket) => void {
  const connections = new Map<Socket, Connection>()
  // Served and now idle, longest idle first: a list through the connections themselves, so a request allocates no
  // set entry that would outlive it (peak RSS under load).
  let longestIdle: Connection | undefined
  let latestIdle: Connection | undefined
  // Only after a request, which took it off the list.
  const becameIdle = (connection: Connection): void => {
    connection.olderIdle = latestIdle
    if (latestIdle === undefined) longestIdle = connection
    else latestIdle.newerIdle = connection
    latestIdle = connection
  }
  const leftIdle = (connection: Connection): void => {
    const { olderIdle, newerIdle } = connection
    if (olderIdle === undefined && longestIdle !== connection) return
    if (olderIdle === undefined) longestIdle = newerIdle
    else olderIdle.newerIdle = newerIdle
    if (newerIdle === undefined) latestIdle = olderIdle
    else newerIdle.olderIdle = olderIdle
    connection.olderIdle = connection.newerIdle = undefined
  }
  server.maxConnections = limits.maxConnections

  // An idle keep-alive connection may be closed at any time (RFC 9112 §9.3); this keeps one place free.
  const makeRoom = (): void => {
    if (connections.size < limits.maxConnections || longestIdle === undefined) return
    const { socket } = longestIdle
    leftIdle(longestIdle)
    socket.destroy()
  }

  server.on('connection', (socket: Socket) => {
    const connection: Connection = {
      socket,
      inFlight: [],
      closing: false,
      olderIdle: undefined,
      newerIdle: undefined,
    }
    connections.set(socket, connection)
    socket.once('close', () => {
      clearTimeout(connection.linger)
      connections.delete(socket)
      leftIdle(connection)
    })
    makeRoom()
  })

  // The error's answer follows every answer already begun or owed to a whole request; a request whose body
  // was still arriving gets the error as its answer, unless its own answer has begun (it would be corrupted).
  const settle = (connection: Connection): void => {
    const { socket, inFlight, failure } = connection
    if (inFlight.some(({ request, response }) => request.complete || response.headersSent)) return
    connection.failure = undefined
    if (failure !== undefined && socket.writable && connection.failed?.response.headersSent !== true)
      answer(socket, failure)
    socket.end()
  }

  const answered = (connection: Connection, exchange: Exchange): void => {
    connection.inFlight.splice(connection.inFlight.indexOf(exchange), 1)
    if (!connections.has(connection.socket)) return
    if (connection.failure !== undefined) return settle(connection)
    if (connection.inFlight.length > 0) return
    becameIdle(connection)
    makeRoom()
  }

  const handlers = server.listeners('request')
  server.removeAllListeners('request')
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const connection = connections.get(request.socket)
    if (connection !== undefined) {
      if (connection.closing) return
      if (connection.inFlight.length >= limits.maxPipelined) {
        // Node parses a whole read (64 KiB) before pausing and buffers every answer of a client that does not read.
        // Closed now, what it holds is freed at once; a pipelining client retries what went unanswered
        // (RFC 9112 §9.3.2).
        connection.closing = true
        closeWithoutStacks(connection.socket)
        return
      }
      const exchange = { request, response }
      connection.inFlight.push(exchange)
      leftIdle(connection)
      response.once('close', () => answered(connection, exchange))
    }
    for (const handler of handlers) handler.call(server, request, response)
  })

  return function fail(error: Error, socket: Socket): void {
    const connection = connections.get(socket)
    if (connection === undefined) {
      answer(socket, error)
      socket.destroy()
      return
    }
    // After requests left unanswered an error would read as their answer; one answer per connection.
    if (connection.closing) return
    connection.failure = error
    const last = connection.inFlight.at(-1)
    if (last?.request.complete === false) connection.failed = last
    connection.closing = true
    connection.linger = setTimeout(() => socket.destroy(), limits.lingerMs).unref()
    settle(connection)
  }
}

/**
 * Destroys `socket`. On its close Node aborts each request it parsed there and nobody answered (about 1,800 from one
 * 64 KiB read) with an error of its own; nobody reads those errors, and their stacks were most of the close's time,
 * so errors made while the socket emits `close` have none (`Error.stackTraceLimit`, restored by its last listener).
 */
function closeWithoutStacks(socket: Socket): void {
  let limit = Error.stackTraceLimit
  socket.prependListener('close', () => {
    limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
  })
  socket.on('close', () => {
    Error.stackTraceLimit = limit
  })
  socket.destroy()
}
