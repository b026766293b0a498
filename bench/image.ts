/**
 * How the image starts the service, read from the Dockerfile, so the benchmark starts it the same way: Node's
 * options of its `CMD ["node", …, "dist/service/server.js"]`, and the runtime settings of its `ENV`
 * (`MALLOC_*`, `NODE_COMPILE_CACHE`).
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The repository's root (this module runs from `dist/bench/`). */
export const REPO = fileURLToPath(new URL('../../', import.meta.url))

const DOCKERFILE = readFileSync(`${REPO}/Dockerfile`, 'utf8')
const command = JSON.parse(/^CMD (\[.*\])\s*$/m.exec(DOCKERFILE)?.[1] ?? '[]') as string[]
if (command[0] !== 'node' || command.at(-1) !== 'dist/service/server.js')
  throw new Error('Dockerfile: no CMD ["node", …, "dist/service/server.js"]')

/** Node's options of the image's command (V8's semi-space size). */
export const SERVICE_NODE_OPTIONS = command.slice(1, -1)

/** The image's runtime settings, as environment variables. */
export const SERVICE_ENVIRONMENT: Record<string, string> = Object.fromEntries(
  [...DOCKERFILE.matchAll(/^\s*(?:ENV\s+)?(MALLOC_\w+|NODE_COMPILE_CACHE)=(\S+?)\s*\\?$/gm)].map((m) => [m[1]!, m[2]!]),
)
