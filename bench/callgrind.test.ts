/** Instruction counts (bench/callgrind.ts) of a real server under valgrind's callgrind. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { callgrindCommand, dumpedInstructions, monitor } from './callgrind.ts'
import { startServer } from './process.ts'

const get = (url: string) =>
  new Promise<number>((resolve, reject) =>
    request(url, { agent: false }, (response) => response.resume().on('end', () => resolve(response.statusCode!)))
      .on('error', reject)
      .end(),
  )

t.test('nothing is counted until instrumentation is on; each dump counts what ran since the one before', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'callgrind-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const script = join(dir, 'server.mjs')
  writeFileSync(
    script,
    "import { createServer } from 'node:http'\n" +
      'createServer((request, response) => response.end(String(Math.random()))).listen(process.env.PORT, process.env.HOST)\n',
  )
  t.throws(() => dumpedInstructions(dir), /no callgrind dump/)
  const probe = (url: string) => get(url).then((status) => (status === 200 ? undefined : `status ${status}`))
  const server = await startServer({
    script,
    nodeArgs: [],
    cwd: dir,
    env: {},
    core: undefined,
    probe,
    wrapper: callgrindCommand(dir),
    readyWithinS: 120,
  })
  t.teardown(() => server.stop())
  for (let i = 0; i < 20; i++) await get(server.url)
  monitor(dir, server.pid, 'dump')
  t.equal(dumpedInstructions(dir), 0, 'a start and 20 requests, not counted')
  monitor(dir, server.pid, 'instrumentation on')
  for (let i = 0; i < 20; i++) await get(server.url)
  monitor(dir, server.pid, 'dump')
  const twenty = dumpedInstructions(dir)
  t.ok(twenty > 20 * 10_000, `20 requests counted: ${twenty} instructions`)
  for (let i = 0; i < 200; i++) await get(server.url)
  monitor(dir, server.pid, 'dump')
  const more = dumpedInstructions(dir)
  t.ok(more > 2 * twenty, `the newest dump, of 200 requests: ${more} instructions`)
})
