/** Programs on PATH, free loopback ports, a process's memory. Imports nothing of the repository (for `test/run/`). */
import { once } from 'node:events'
import { accessSync, constants, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { delimiter, join } from 'node:path'

function isExecutable(path: string) {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** Whether `command` is on PATH (or, an absolute path, is executable). */
export function onPath(command: string) {
  if (command.startsWith('/')) return isExecutable(command)
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && isExecutable(join(dir, command)))
}

/** A loopback port nothing listens on (taken from the OS, then released). */
export async function freePort() {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

/** The resident set of process `pid`, MB. */
export const residentMb = (pid: number) =>
  Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024
