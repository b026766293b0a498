/** Concurrent clients creating plants through the gateway, a new id each, never retried, every answer recorded. */
import { Agent } from 'node:https'
import { authorized, type Gateway } from './nginx.ts'
import { waitUntil } from './podman.ts'
import { postPlant } from './post-plant.ts'

/** One request and its answer: status 0 when none came within 15 s; times are `performance.now()`. */
export type Outcome = Readonly<{ id: bigint; status: number; retryAfter?: string; sentAt: number; answeredAt: number }>

/** Requests per second per client at most: half the gateway's per-address rate, so none is 429. */
const CLIENT_RATE = 50

/** `clients` clients creating plants from `firstId` up, each from its own address; after a non-200 one waits 100 ms. */
export function startLoad(gateway: Gateway, token: string, firstId: bigint, clients = 16) {
  const agent = new Agent({ keepAlive: true, maxSockets: clients, ca: gateway.ca })
  const headers = authorized(token)
  const outcomes: Outcome[] = []
  let next = firstId
  let stopped = false
  const client = async (from: string) => {
    while (!stopped) {
      const [id, sentAt] = [next++, performance.now()]
      const answer = await postPlant(
        gateway.url,
        { id, name: `plant ${id}` },
        { agent, from, timeoutMs: 15_000, headers },
      )
        .then((response) => ({ status: response.statusCode, retryAfter: response.headers['retry-after'] }))
        .catch(() => ({ status: 0, retryAfter: undefined }))
      outcomes.push({ id, ...answer, sentAt, answeredAt: performance.now() })
      const pause = answer.status === 200 ? sentAt + 1000 / CLIENT_RATE - performance.now() : 100
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }
  const running = Promise.all(Array.from({ length: clients }, (_, i) => client(`127.0.0.${10 + i}`)))
  return {
    outcomes: outcomes as readonly Outcome[],
    /** Resolves once `count` creates sent since `since` were answered 200. @throws after `timeoutMs`. */
    successes: (count: number, since: number, timeoutMs: number) =>
      waitUntil(
        `${count} creates answered 200`,
        timeoutMs,
        async () => outcomes.filter((o) => o.status === 200 && o.sentAt >= since).length >= count,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; by status: ${JSON.stringify(countByStatus(outcomes))}`)
      }),
    /** Stops sending; resolves once every client's last request is answered. */
    stop: async () => {
      stopped = true
      await running
      agent.destroy()
    },
  }
}

/** Answers by status, e.g. `{ 200: 1234, 503: 56 }`. */
export function countByStatus(outcomes: readonly Outcome[]): Record<number, number> {
  const counts: Record<number, number> = {}
  for (const { status } of outcomes) counts[status] = (counts[status] ?? 0) + 1
  return counts
}

/** Seconds from `killedAt` to the first 200 of a request sent after it; the answers between, by status. */
export function failoverFigures(outcomes: readonly Outcome[], killedAt: number) {
  const recovered = outcomes
    .filter((o) => o.sentAt >= killedAt && o.status === 200)
    .reduce((first, o) => Math.min(first, o.answeredAt), Infinity)
  if (recovered === Infinity) throw new Error('no create sent after the kill was answered 200')
  const during = countByStatus(outcomes.filter((o) => o.answeredAt >= killedAt && o.answeredAt <= recovered))
  return { recoverySeconds: (recovered - killedAt) / 1000, during }
}
