/**
 * The service's own Prometheus metrics (`GET /metrics`, its public surface), read around a measured run: the event
 * loop's delay (prom-client's default `nodejs_eventloop_lag_p99_seconds`, whose histogram each scrape resets, so a
 * scrape before and one after the run give the run's p99) and the store's group-commit batches.
 *
 * @module
 */

/** One scrape: cumulative store totals, and the event loop's p99 delay since the previous scrape, ms. */
export interface Scrape {
  readonly transactions: number
  readonly plants: number
  readonly lagP99Ms: number | undefined
}

/** The sum of a metric's samples (all label sets); `undefined` when it has none. */
function sample(text: string, name: string): number | undefined {
  const values = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].map((m) => Number(m[1]))
  return values.length === 0 ? undefined : values.reduce((sum, value) => sum + value, 0)
}

/** Parses a scrape's text (Prometheus exposition format). */
export function parseScrape(text: string): Scrape {
  const lag = sample(text, 'nodejs_eventloop_lag_p99_seconds')
  return {
    transactions: sample(text, 'plant_store_group_commit_batch_size_count') ?? 0,
    plants: sample(text, 'plant_store_group_commit_batch_size_sum') ?? 0,
    lagP99Ms: lag === undefined ? undefined : lag * 1000,
  }
}

/** Scrapes `<url>/metrics`; `undefined` when the target has none (the ceilings, the floor). */
export async function scrape(url: string): Promise<Scrape | undefined> {
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })
    return response.ok ? parseScrape(await response.text()) : undefined
  } catch {
    return undefined
  }
}

/** Mean plants per store transaction between two scrapes; `undefined` when nothing was written. */
export function meanBatch(before: Scrape | undefined, after: Scrape | undefined): number | undefined {
  const transactions = (after?.transactions ?? 0) - (before?.transactions ?? 0)
  return transactions <= 0 ? undefined : (after!.plants - before!.plants) / transactions
}
