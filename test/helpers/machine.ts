/**
 * What the machine offers: programs on PATH, free loopback ports. It imports nothing of the repository, for
 * `test/run/`'s sake.
 *
 * @module
 */
import { once } from 'node:events'
import { accessSync, constants } from 'node:fs'
import { createServer } from 'node:net'
import { delimiter, join } from 'node:path'

/** Whether `path` is a file this process may execute. */
function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** Whether `command` is found on PATH (or, given as an absolute path, is executable). */
export function onPath(command: string): boolean {
  if (command.startsWith('/')) return isExecutable(command)
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && isExecutable(join(dir, command)))
}

/** A loopback port nothing listens on (taken from the OS, then released). */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}
