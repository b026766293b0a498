/**
 * Instruction counts of a server process: valgrind's callgrind, collecting nothing until told, driven through its
 * gdbserver with `vgdb` (valgrind's manual, "Callgrind Monitor Commands"). Counts are of user-space instructions
 * (callgrind's `Ir`), the same for the same binary, input and environment whatever else the machine is doing.
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SERVER_HOST } from './process.ts'

const OUT = 'callgrind.out'

/** The command before `node` that runs a server under callgrind, its files in `dir`, counting nothing yet. */
export function callgrindCommand(dir: string): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    '--instr-atstart=no',
    `--callgrind-out-file=${join(dir, OUT)}`,
    `--vgdb-prefix=${join(dir, 'vgdb')}`,
  ]
}

/**
 * Sends a monitor command to the callgrind process `pid` started with {@link callgrindCommand}: `instrumentation on`
 * starts counting, `dump` writes what was counted since to a numbered file. @throws when vgdb fails.
 */
export function monitor(dir: string, pid: number, command: 'instrumentation on' | 'dump'): void {
  // valgrind names its pipes after $USER and $HOST: the server's, as startServer sets them.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOST: SERVER_HOST }
  execFileSync('vgdb', [`--vgdb-prefix=${join(dir, 'vgdb')}`, `--pid=${pid}`, ...command.split(' ')], {
    env,
    stdio: 'ignore',
    timeout: 60_000,
  })
}

/** Instructions of the newest dump in `dir` (its `summary:` line). @throws when there is none. */
export function dumpedInstructions(dir: string): number {
  const dumps = readdirSync(dir)
    .filter((name) => name.startsWith(`${OUT}.`))
    .sort((a, b) => Number(a.slice(OUT.length + 1)) - Number(b.slice(OUT.length + 1)))
  const summary = dumps.length === 0 ? null : /^summary: (\d+)$/m.exec(readFileSync(join(dir, dumps.at(-1)!), 'utf8'))
  if (summary === null) throw new Error(`no callgrind dump with a summary in ${dir}`)
  return Number(summary[1])
}
