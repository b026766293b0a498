/**
 * `npm run test:workflow [-- description.arazzo.yaml]`: starts the built service (dist/service/server.js) on
 * 127.0.0.1 and a free port, with a fresh data directory and a generated token, runs
 * api/plant-store.arazzo.yaml (or the file given) against it with Redocly `respect` (the token and a
 * plant id unique to the run are inputs, not in the file), then stops the service
 * and removes the directory. Exits with respect's status; 1 when the service does
 * not start, or the whole run exceeds {@link DEADLINE_MS}.
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { randomBytes, randomInt } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

/** Bound on the whole run (start, workflow, stop), in milliseconds. */
const DEADLINE_MS = 180_000

const root = resolve(import.meta.dirname, '..')
const dataDir = mkdtempSync(join(tmpdir(), 'plant-store-workflow-'))
const token = randomBytes(24).toString('base64url')
// Microseconds since the epoch plus noise: unique per run, within 2^53.
const plantId = Date.now() * 1000 + randomInt(1000)

const service = spawn(process.execPath, [join(root, 'dist/service/server.js')], {
  cwd: root,
  env: {
    PATH: process.env.PATH,
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    PLANT_STORE_TOKENS: token,
    LOG_LEVEL: 'info',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
})
const serviceClosed = once(service, 'close')
const deadline = setTimeout(() => {
  console.error(`test:workflow: no result within ${DEADLINE_MS} ms`)
  service.kill('SIGKILL')
  process.exit(1)
}, DEADLINE_MS)

/** Resolves with the base URL the service logs once it listens; rejects if it exits first. */
function listening(): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    let output = ''
    service.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match?.[1] !== undefined) resolveUrl(match[1])
    })
    service.on('close', (code) => reject(new Error(`the service exited (${code}) before listening:\n${output}`)))
  })
}

let status = 1
try {
  const url = await listening()
  const redocly = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js')
  const respect = spawn(
    process.execPath,
    [
      redocly,
      'respect',
      resolve(process.argv[2] ?? join(root, 'api/plant-store.arazzo.yaml')),
      '--server',
      `plantStore=${url}`,
      '--input',
      `token=${token}`,
      '--input',
      `plantId=${plantId}`,
      '--max-fetch-timeout',
      '30000',
    ],
    {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    },
  )
  const [code] = (await once(respect, 'close')) as [number | null]
  status = code ?? 1
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
} finally {
  service.kill('SIGTERM')
  await serviceClosed
  rmSync(dataDir, { recursive: true, force: true })
  clearTimeout(deadline)
}
process.exitCode = status
