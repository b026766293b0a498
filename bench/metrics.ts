/**
 * Reads the service's own Prometheus metrics (`GET /metrics`) around a run: how
 * many store transactions group commit made, their mean size and duration. The
 * explanation of a store-bound result is there (one fsync per transaction).
 *
 * @module
 */
import { request } from 'node:http'

/** Cumulative totals of the store metrics at one moment. */
export interface StoreTotals {
  /** Store transactions (group-commit batches). */
  readonly transactions: number
  /** Plants written in them. */
  readonly plants: number
  /** Seconds spent in them. */
  readonly seconds: number
}

/** What the store did between two snapshots. */
export interface StoreActivity {
  readonly transactions: number
  /** Mean plants per transaction. */
  readonly meanBatch: number
  /** Mean transaction duration, ms. */
  readonly meanTransactionMs: number
}

function sample(text: string, name: string): number {
  let total = 0
  for (const line of text.split('\n'))
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`))
      total += Number(line.slice(line.lastIndexOf(' ') + 1))
  return total
}

/**
 * Snapshot of the store metrics (`plant_store_group_commit_batch_size`,
 * `plant_store_store_transaction_seconds`).
 * @returns `undefined` when the service has no such metrics or does not answer.
 */
export function storeTotals(url: string): Promise<StoreTotals | undefined> {
  return new Promise((resolve) => {
    const sent = request(`${url}/metrics`, { agent: false, timeout: 5000 }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => {
        const transactions = sample(text, 'plant_store_group_commit_batch_size_count')
        resolve(
          response.statusCode !== 200 || !text.includes('plant_store_group_commit_batch_size_count')
            ? undefined
            : {
                transactions,
                plants: sample(text, 'plant_store_group_commit_batch_size_sum'),
                seconds: sample(text, 'plant_store_store_transaction_seconds_sum'),
              },
        )
      })
    })
    sent.on('timeout', () => sent.destroy())
    sent.on('error', () => resolve(undefined))
    sent.end()
  })
}

/** The activity between two snapshots; `undefined` when either is missing or nothing was written. */
export function storeActivity(
  before: StoreTotals | undefined,
  after: StoreTotals | undefined,
): StoreActivity | undefined {
  if (before === undefined || after === undefined) return undefined
  const transactions = after.transactions - before.transactions
  if (transactions <= 0) return undefined
  return {
    transactions,
    meanBatch: (after.plants - before.plants) / transactions,
    meanTransactionMs: (1000 * (after.seconds - before.seconds)) / transactions,
  }
}
