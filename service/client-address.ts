/**
 * The client address that rate limits and logs use.
 * @module
 */
import { isIP, isIPv4, type Socket } from 'node:net'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'

/** What {@link clientAddress} gives when the peer's address was never known. */
export const UNKNOWN_ADDRESS = 'unknown'

/**
 * Reads the peer's address as the connection opens (the server's `connection` event).
 * Node keeps the peer name once read; unread, `remoteAddress` is `undefined` after the
 * peer is gone, and a log line or rate-limit key written then would have no address.
 */
export function rememberPeer(socket: Socket): void {
  void socket.remoteAddress
}

/**
 * The last hop Fastify trusts (`request.ips`, socket first) before any entry that is
 * not an IP address (`isIP`), so arbitrary `X-Forwarded-For` text cannot become a new
 * rate-limit budget; normalised (IPv4-mapped as IPv4, IPv6 per RFC 5952), or
 * {@link UNKNOWN_ADDRESS}. Never throws, whatever state the connection is in.
 */
export function clientAddress(request: FastifyRequest): string {
  const hops = request.ips ?? [request.ip]
  let address = hops[0]
  for (let index = 1; index < hops.length && isIP(hops[index]!) !== 0; index++) address = hops[index]!
  if (address === undefined || isIP(address) === 0) return UNKNOWN_ADDRESS
  // An IPv4 address is already in its normal form; normalizeIP would first try its IPv6 pattern.
  return isIPv4(address) ? address : normalizeIP(address, 128)
}
