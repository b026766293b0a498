/**
 * How the image starts the service, read from the Dockerfile, so the benchmark's
 * scripts (`run.ts`, `startup.ts`) start it the same way without restating it.
 * @module
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository's root (this module runs from `dist/bench/`). */
export const REPO = fileURLToPath(new URL('../../', import.meta.url))

const DOCKERFILE = readFileSync(join(REPO, 'Dockerfile'), 'utf8')

/**
 * Node's options in the image's command (the Dockerfile's `CMD ["node", …options,
 * "dist/service/server.js"]`): the service targets run with them, as the service ships.
 * @throws when the Dockerfile has no such command.
 */
function imageNodeOptions(): string[] {
  const command = /^CMD (\[.*\])\s*$/m.exec(DOCKERFILE)?.[1]
  const words = command === undefined ? [] : (JSON.parse(command) as string[])
  if (words[0] !== 'node' || words.at(-1) !== 'dist/service/server.js') throw new Error(`Dockerfile: no CMD ["node", …, "dist/service/server.js"] (found ${command})`)
  return words.slice(1, -1)
}

/** Node's options of the image's command (`--max-semi-space-size=4`). */
export const SERVICE_NODE_OPTIONS = imageNodeOptions()

/** glibc's malloc settings in the image's `ENV` (`MALLOC_ARENA_MAX=1`) as `NAME=value`, read at exec: the service targets get them too. */
export const SERVICE_MALLOC_SETTINGS = [...DOCKERFILE.matchAll(/^\s*(?:ENV\s+)?(MALLOC_\w+=\S+?)\s*\\?$/gm)].map(([, setting]) => setting!)

/** {@link SERVICE_MALLOC_SETTINGS} as environment variables. */
export const SERVICE_MALLOC_ENVIRONMENT: Record<string, string> = Object.fromEntries(SERVICE_MALLOC_SETTINGS.map((setting) => setting.split('=') as [string, string]))
