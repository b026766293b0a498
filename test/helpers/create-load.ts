/**
 * Creates under load through the gateway, for failover and restart tests: concurrent
 * clients each sending `POST /plants` with a new id, never retried, every answer recorded.
 *
 * @module
 */
import { Agent } from 'node:https'
import type { Gateway } from './nginx.ts'
import { postPlant } from './post-plant.ts'

/** One request and its answer. */
export interface Outcome {
  readonly id: bigint
  /** The HTTP status; 0 when no answer came (connection error, or none within 15 s). */
  readonly status: number
  readonly retryAfter: string | undefined
  /** `performance.now()` when the request was sent, and when its answer (or error) came. */
  readonly sentAt: number
  readonly answeredAt: number
}

/** Load that is running. */
export interface Load {
  /** Every answer so far, in the order they came. */
  readonly outcomes: readonly Outcome[]
  /** Resolves once `count` answers with status 200 have come since `since` (a `performance.now()`), or rejects after `timeoutMs`. */
  successes(count: number, since: number, timeoutMs: number): Promise<void>
  /** Stops sending; resolves once every client's last request is answered. */
  stop(): Promise<void>
}

/** Requests a client sends per second at most: half the gateway's per-address rate, so none is 429. */
const CLIENT_RATE = 50

/**
 * Starts `clients` clients creating plants through `gateway` with ids from `firstId` up,
 * each from its own loopback address (127.0.0.10, …), at most {@link CLIENT_RATE} a
 * second; after an answer other than 200 a client waits 100 ms.
 */
export function startLoad(gateway: Gateway, token: string, firstId: bigint, clients = 16): Load {
  const agent = new Agent({ keepAlive: true, maxSockets: clients, ca: gateway.ca })
  const outcomes: Outcome[] = []
  let next = firstId
  let stopped = false
  const listeners = new Set<() => void>()
  const client = async (localAddress: string) => {
    while (!stopped) {
      const id = next++
      const outcome = await create(agent, gateway.url, token, id, localAddress)
      outcomes.push(outcome)
      for (const listener of listeners) listener()
      const pause = outcome.status === 200 ? outcome.sentAt + 1000 / CLIENT_RATE - performance.now() : 100
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }
  const running = Promise.all(Array.from({ length: clients }, (_, i) => client(`127.0.0.${10 + i}`)))
  return {
    outcomes,
    successes: (count, since, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (outcomes.filter((outcome) => outcome.status === 200 && outcome.sentAt >= since).length < count) return
          finish()
          resolve()
        }
        const timer = setTimeout(() => {
          finish()
          reject(
            new Error(
              `fewer than ${count} creates answered 200 within ${timeoutMs} ms; answers by status: ${JSON.stringify(countByStatus(outcomes))}`,
            ),
          )
        }, timeoutMs)
        const finish = () => {
          clearTimeout(timer)
          listeners.delete(check)
        }
        listeners.add(check)
        check()
      }),
    stop: async () => {
      stopped = true
      await running
      agent.destroy()
    },
  }
}

/** One create of plant `id`; never throws: no whole answer within 15 s is status 0. */
async function create(agent: Agent, url: string, token: string, id: bigint, localAddress: string): Promise<Outcome> {
  const sentAt = performance.now()
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const answer = await postPlant(
    url,
    { id, name: `plant ${id}` },
    { agent, from: localAddress, timeoutMs: 15_000, headers },
  ).then(
    (response) => ({ status: response.statusCode, retryAfter: response.headers['retry-after'] }),
    () => ({ status: 0, retryAfter: undefined }),
  )
  return { id, ...answer, sentAt, answeredAt: performance.now() }
}

/** Answers by status, e.g. `{ 200: 1234, 503: 56 }`. */
export function countByStatus(outcomes: readonly Outcome[]): Record<number, number> {
  const counts: Record<number, number> = {}
  for (const { status } of outcomes) counts[status] = (counts[status] ?? 0) + 1
  return counts
}

/**
 * A failover whose kill happened at `killedAt` (`performance.now()`): seconds from it to the first 200 of a request sent after it,
 * and the answers that came in between, by status. @throws when no request sent after the kill was answered 200.
 */
export function failoverFigures(
  outcomes: readonly Outcome[],
  killedAt: number,
): { recoverySeconds: number; during: Record<number, number> } {
  const recovered = outcomes
    .filter((outcome) => outcome.sentAt >= killedAt && outcome.status === 200)
    .reduce((first, outcome) => Math.min(first, outcome.answeredAt), Infinity)
  if (recovered === Infinity) throw new Error('no create sent after the kill was answered 200')
  const during = countByStatus(
    outcomes.filter((outcome) => outcome.answeredAt >= killedAt && outcome.answeredAt <= recovered),
  )
  return { recoverySeconds: (recovered - killedAt) / 1000, during }
}
