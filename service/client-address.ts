/**
 * The client address that rate limits and logs use.
 * @module
 */
import { isIP, isIPv4 } from 'node:net'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'

/**
 * The last hop Fastify trusts (`request.ips`, socket first) before any entry that is
 * not an IP address (`isIP`), so arbitrary `X-Forwarded-For` text cannot become a new
 * rate-limit budget; normalised (IPv4-mapped as IPv4, IPv6 per RFC 5952).
 */
export function clientAddress(request: FastifyRequest): string {
  const hops = request.ips ?? [request.ip]
  let address = hops[0]!
  for (let index = 1; index < hops.length && isIP(hops[index]!) !== 0; index++) address = hops[index]!
  // An IPv4 address is already in its normal form; normalizeIP would first try its IPv6 pattern.
  return isIPv4(address) ? address : normalizeIP(address, 128)
}
