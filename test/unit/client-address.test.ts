/**
 * Unit tests of `clientAddress` (service/client-address.ts): along the hops Fastify
 * trusts, only IP addresses count, normalised.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import t from 'tap'
import { clientAddress } from '../../service/client-address.js'

/** The client address of a request whose trusted hops are `ips` (socket first), as Fastify gives them. */
const behind = (...ips: string[]) => clientAddress({ ips, ip: ips.at(-1) } as unknown as FastifyRequest)

t.test('without trusted hops it is the socket address, normalised', async (t) => {
  t.equal(clientAddress({ ip: '::ffff:198.51.100.9' } as FastifyRequest), '198.51.100.9', 'IPv4-mapped IPv6 is IPv4')
  t.equal(clientAddress({ ip: '2001:DB8:0:0:0:0:0:1' } as FastifyRequest), '2001:db8::1', 'IPv6 in its RFC 5952 form')
})

t.test('behind trusted hops it is the address the last one forwarded', async (t) => {
  t.equal(behind('10.0.0.2', '198.51.100.1'), '198.51.100.1')
  t.equal(behind('10.0.0.2', '10.0.0.3', '::ffff:203.0.113.5'), '203.0.113.5')
})

t.test('a forwarded entry that is not an IP address ends the chain: the hop before it is the client', async (t) => {
  for (const junk of ['198.51.100.001', '0xc6.51.100.1', '3325256705', '198.51.100.1:1234', '[2001:db8::1]:80', 'not-an-ip', '', 'x'.repeat(7000)]) {
    t.equal(behind('10.0.0.2', junk), '10.0.0.2', `${junk.slice(0, 20)}: the socket's address`)
    t.equal(behind('10.0.0.2', '10.0.0.3', junk, '203.0.113.7'), '10.0.0.3', `${junk.slice(0, 20)} behind a valid hop`)
  }
})
