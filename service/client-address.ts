/**
 * The client address that limits count and logs show. Behind a trusted gateway
 * Fastify (proxy-addr) takes `request.ip` from `X-Forwarded-For` as written, so any
 * text a trusted hop passed on (`not-an-ip`, `0xc6.51.100.1`, `198.51.100.1:1234`,
 * 7 KB of anything) would become the client's address, and a new budget.
 *
 * @module
 */
import { isIP } from 'node:net'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'

/**
 * The request's client address: along the hops Fastify trusts (`request.ips`: the
 * socket's address, then `X-Forwarded-For` from the right), the last one before
 * anything that is not an IP address (`node:net` `isIP`: dotted-quad IPv4 without
 * leading zeros, or IPv6); the socket's address when the first forwarded entry is
 * not one. Normalised: IPv4-mapped IPv6 as IPv4, IPv6 in RFC 5952 form.
 */
export function clientAddress(request: FastifyRequest): string {
  const hops = request.ips ?? [request.ip]
  let address = hops[0]!
  for (let index = 1; index < hops.length && isIP(hops[index]!) !== 0; index++) address = hops[index]!
  return normalizeIP(address, 128)
}
