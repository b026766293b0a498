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
  if (words[0] !== 'node' || words.at(-1) !== 'dist/service/server.js')
    throw new Error(`Dockerfile: no CMD ["node", …, "dist/service/server.js"] (found ${command})`)
  return words.slice(1, -1)
}

/** Node's options of the image's command (`--max-semi-space-size=4`). */
export const SERVICE_NODE_OPTIONS = imageNodeOptions()

/**
 * The runtime settings of the image's `ENV` as `NAME=value`: glibc's malloc settings
 * (`MALLOC_ARENA_MAX=1`, read at exec) and Node's compile cache
 * (`NODE_COMPILE_CACHE`); the service targets get them too. The service's own
 * configuration (`PORT`, `DATA_DIR`, …) is not among them: the benchmark sets that.
 */
export const SERVICE_ENV_SETTINGS = [
  ...DOCKERFILE.matchAll(/^\s*(?:ENV\s+)?((?:MALLOC_\w+|NODE_COMPILE_CACHE)=\S+?)\s*\\?$/gm),
].map(([, setting]) => setting!)

/** {@link SERVICE_ENV_SETTINGS} as environment variables. */
export const SERVICE_ENVIRONMENT: Record<string, string> = Object.fromEntries(
  SERVICE_ENV_SETTINGS.map((setting) => setting.split('=') as [string, string]),
)
