/** A TCP proxy that can be partitioned (then it is also a server that never answers) or cut. */
import { once } from 'node:events'
import { connect, createServer, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import type { TestContext } from './app.ts'

/**
 * A proxy to `target` on a free loopback port, closed at teardown. `partition` stops bytes both ways, no socket closed;
 * `heal` forwards again; `healNew` new connections only (as after a failover); `cut` closes all, refusing until `heal`.
 */
export async function partitionProxy(t: TestContext, target: string) {
  const upstream = new URL(target)
  const sockets = new Set<Socket>()
  const held: Socket[] = [] // accepted during a partition, not yet connected upstream
  let partitioned = false
  let refusing = false
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.on('error', () => socket.destroy())
    socket.on('close', () => sockets.delete(socket))
  }
  // Forwarded chunk by chunk, not piped: pipe() resumes a source on drain, and a pause must hold.
  const link = (client: Socket) => {
    const backend = connect(Number(upstream.port || 5432), upstream.hostname)
    track(backend)
    for (const [from, to] of [
      [client, backend],
      [backend, client],
    ] as const) {
      from.on('data', (chunk) => to.write(chunk))
      from.on('end', () => to.end())
      from.on('close', () => to.destroy())
    }
  }
  const server = createServer((client) => {
    if (refusing) return client.destroy()
    track(client)
    if (!partitioned) return link(client)
    client.pause()
    held.push(client)
  })
  await once(server.listen(0, '127.0.0.1'), 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  const { port } = server.address() as { port: number }
  const url = new URL(target)
  url.host = `127.0.0.1:${port}`
  return {
    url: url.toString(),
    partition: () => {
      partitioned = true
      for (const socket of sockets) socket.pause()
    },
    heal: () => {
      partitioned = false
      refusing = false
      for (const client of held.splice(0)) link(client)
      for (const socket of sockets) socket.resume()
    },
    healNew: () => {
      partitioned = false
    },
    cut: () => {
      refusing = true
      for (const socket of [...sockets, ...held.splice(0)]) socket.destroy()
    },
    /** Closes the port (connections refused) and every connection; `reopen` listens on it again. */
    close: () => {
      server.close()
      for (const socket of sockets) socket.destroy()
    },
    reopen: () => once(server.listen(port, '127.0.0.1'), 'listening'),
  }
}

/** Checks `condition` every 10 ms until it holds, for at most `timeoutMs`. @returns whether it held. */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  for (const deadline = performance.now() + timeoutMs; performance.now() < deadline; await sleep(10))
    if (await condition()) return true
  return false
}

/** Whether a session waits on a lock `client`'s session holds (`pg_locks` is read live). */
export async function blockedBy(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query(
    'select count(*)::int as n from (select distinct pid from pg_locks where not granted) w where pg_backend_pid() ' +
      '= any(pg_blocking_pids(w.pid))',
  )
  return rows[0].n > 0
}
