/**
 * What a test needs beyond Node and `npm ci`: `t.test(name, requires('redis'), …)` skips saying how to get it; the run
 * lists skips.
 */
import { appendFileSync } from 'node:fs'
import { relative } from 'node:path'
import { onPath } from './machine.ts'

export type Need = 'redis' | 'root' | 'chromium' | 'promtool'

/** Debian's Chromium, which the browser tests drive. */
export const CHROMIUM = '/usr/bin/chromium'

/** `TEST_REDIS_URL`: the Redis the test run started, or one named by hand. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined

/** Why `need` is missing, or undefined. */
function missing(need: Need): string | undefined {
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

/** `t.test` options: `{ skip: reasons }` when any of `needs` is missing, recorded in `TEST_SKIPS_FILE` if set. */
export function requires(...needs: Need[]): { skip?: string } {
  const reasons = needs.map(missing).filter((reason) => reason !== undefined)
  if (reasons.length === 0) return {}
  const [reason, file, test] = [`needs ${reasons.join('; ')}`, process.env.TEST_SKIPS_FILE, process.argv[1] ?? '']
  if (file) appendFileSync(file, `${JSON.stringify({ test: relative(process.cwd(), test), reason })}\n`)
  return { skip: reason }
}
