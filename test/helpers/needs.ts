/**
 * What a test needs beyond Node and `npm ci`: `t.test(name, requires('redis'), …)` skips naming what is missing and
 * how to get it; the test run lists every skip.
 *
 * @module
 */
import { appendFileSync } from 'node:fs'
import { relative } from 'node:path'
import { onPath } from './machine.ts'

export type Need = 'redis' | 'root' | 'chromium' | 'promtool'

/** Debian's Chromium, the browser the browser tests drive. */
export const CHROMIUM = '/usr/bin/chromium'

/** `TEST_REDIS_URL`: the Redis the test run started, or one named by hand. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined

/** Why `need` is missing on this machine, or undefined when it is there. */
export function missing(need: Need): string | undefined {
  switch (need) {
    case 'redis':
      return TEST_REDIS_URL === undefined
        ? 'Redis: no TEST_REDIS_URL; npm run test:services starts redis-server if it is installed ' +
            '(apt-get install redis-server)'
        : undefined
    case 'root':
      return process.getuid?.() === 0
        ? undefined
        : 'root: mounting small file systems and running the service as another user need root ' +
            '(run npm run test:services as root)'
    case 'chromium':
      return onPath(CHROMIUM) ? undefined : `Chromium: nothing at ${CHROMIUM} (apt-get install chromium)`
    case 'promtool':
      return onPath('promtool') ? undefined : 'promtool: not on PATH (apt-get install prometheus)'
  }
}

/** Options for `t.test`: `{ skip: reasons }` when any of `needs` is missing (recorded for the run's list). */
export function requires(...needs: Need[]): { skip?: string } {
  const reasons = needs.map(missing).filter((reason) => reason !== undefined)
  if (reasons.length === 0) return {}
  const skip = `needs ${reasons.join('; ')}`
  recordSkip(skip)
  return { skip }
}

/** Appends `reason` and the test file to `TEST_SKIPS_FILE`, if set. */
function recordSkip(reason: string): void {
  const test = relative(process.cwd(), process.argv[1] ?? '')
  if (process.env.TEST_SKIPS_FILE) appendFileSync(process.env.TEST_SKIPS_FILE, `${JSON.stringify({ test, reason })}\n`)
}
