/** The client address that rate limits and logs use. @module */
import { isIP, isIPv4, type Socket } from 'node:net'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'

export const UNKNOWN_ADDRESS = 'unknown'

/** Reads the peer's address on `connection`: Node caches it, and unread it is `undefined` once the peer is gone. */
export function rememberPeer(socket: Socket): void {
  void socket.remoteAddress
}

/**
 * The last trusted hop before any non-IP entry (so `X-Forwarded-For` text is no new rate-limit key),
 * normalised per RFC 5952.
 */
export function clientAddress(request: FastifyRequest): string {
  const hops = request.ips ?? [request.ip]
  let address = hops[0]
  for (let index = 1; index < hops.length && isIP(hops[index]!) !== 0; index++) address = hops[index]!
  if (address === undefined || isIP(address) === 0) return UNKNOWN_ADDRESS
  return isIPv4(address) ? address : normalizeIP(address, 128)
}
