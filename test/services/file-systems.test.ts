/**
 * The embedded store's data directory on real file systems: one that fills up under
 * load (a small tmpfs this test mounts), and ones the service cannot write (a
 * read-only mount, another user's directory or file). Needs root, for mount(8) and
 * to run a process as another user; without it each test is skipped, naming it.
 *
 * @module
 */
import { chmodSync, chownSync, mkdtempSync, rmdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { createApp } from '../../service/app.js'
import { PROBE_FILE, SQLITE_FILE } from '../../service/store/sqlite.js'
import { logSink, testConfig, TOKEN } from '../helpers/app.js'
import { run } from '../helpers/command.js'
import { contractViolations } from '../helpers/contract.js'
import { requires } from '../helpers/needs.js'
import { postPlant } from '../helpers/post-plant.js'
import { runToExit } from '../helpers/process.js'

/** nobody:nogroup on Debian. */
const NOBODY = { uid: 65534, gid: 65534 }

/** Mounts a tmpfs with `options` (mount(8) `-o`) on a new directory; unmounted and removed at teardown. */
async function mountTmpfs(t: Test, options: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-fs-'))
  await run('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir])
  t.teardown(async () => {
    // Lazy: detached now, whatever teardown order closes the app in.
    await run('umount', ['--lazy', dir])
    rmdirSync(dir)
  })
  return dir
}

/** Ids and names of the plants in the store's file, read by a connection of their own. */
function storedPlants(dataDir: string): Map<number, string> {
  const db = new SQLite(join(dataDir, SQLITE_FILE), { readonly: true })
  try {
    return new Map((db.prepare('select id, name from plant').all() as { id: number; name: string }[]).map((row) => [row.id, row.name]))
  } finally {
    db.close()
  }
}

t.test('a disk that fills up under load: 503 with Retry-After, never 500; every 200 kept, nothing half-stored; readiness 503; recovery without restart', requires('root'), async (t) => {
  const dataDir = await mountTmpfs(t, 'size=16m')
  const { stream, lines } = logSink()
  const app = await createApp(testConfig({ dataDir, databaseUrl: undefined }), { level: 'error', stream })
  t.teardown(() => app.close())
  // Leave about 1 MiB free: room for some hundreds of plants.
  const { bavail, bsize } = statfsSync(dataDir)
  const ballast = join(dataDir, 'ballast')
  writeFileSync(ballast, Buffer.alloc(bavail * bsize - 1024 * 1024))

  const name = (id: number) => `plant ${id} ${'x'.repeat(1000)}`
  const create = (id: number) => postPlant(app, { id, name: name(id) })
  // 20 clients send new plants until the disk has refused 100 of them.
  const answered: { id: number; status: number }[] = []
  const problems = new Set<string>()
  let next = 1
  let refusals = 0
  const client = async () => {
    while (refusals < 100) {
      const id = next++
      const response = await create(id)
      answered.push({ id, status: response.statusCode })
      if (response.statusCode !== 503) continue
      refusals++
      if (response.headers['retry-after'] !== '1') problems.add(`Retry-After ${response.headers['retry-after']}`)
      for (const violation of contractViolations(response)) problems.add(violation)
      if (response.json().message !== 'The store is unavailable; retry later') problems.add(response.body)
    }
  }
  await Promise.all(Array.from({ length: 20 }, client))
  const statuses = new Set(answered.map((answer) => answer.status))
  t.same([...statuses].sort(), [200, 503], 'every create is answered 200 or 503, never 500')
  t.same([...problems], [], 'every 503 has Retry-After and the Error body')
  const firstRefused = answered.findIndex((answer) => answer.status === 503)
  const ok = answered.filter((answer) => answer.status === 200).map((answer) => answer.id)
  const refused = answered.filter((answer) => answer.status === 503).map((answer) => answer.id)

  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200, 'the process still serves')
  const notReady = await app.inject({ url: '/health/ready' })
  t.equal(notReady.statusCode, 503, 'readiness reports the full disk')
  t.equal(notReady.headers['retry-after'], '1')
  const failures = lines.filter((line) => line.msg === 'store cannot write to its disk; creates get 503 until it can')
  t.equal(failures.length, 1, 'logged once, with the cause')
  t.match(failures[0], { level: 50, err: { code: /^SQLITE_(FULL|IOERR)/ } })

  const stored = storedPlants(dataDir)
  t.same([...stored.keys()].sort((a, b) => a - b), [...ok].sort((a, b) => a - b), 'stored: exactly the plants answered 200 (none of the 503s)')
  t.ok(ok.every((id) => stored.get(id) === name(id)), 'each as sent')

  rmSync(ballast)
  t.equal((await app.inject({ url: '/health/ready' })).statusCode, 200, 'space freed: ready again, without a restart')
  t.same(await app.inject({ url: '/health/ready' }).then((response) => response.json()), { status: 'ready' })
  const retried = await Promise.all(refused.map(create))
  t.ok(
    retried.every((response) => response.statusCode === 200),
    'every refused create succeeds when retried',
  )
  const replayed = await Promise.all(ok.slice(0, 50).map(create))
  t.ok(
    replayed.every((response) => response.statusCode === 200),
    'plants answered 200 before replay as stored',
  )
  const after = storedPlants(dataDir)
  const lost = ok.filter((id) => after.get(id) !== name(id))
  t.same(lost, [], 'no plant answered 200 is lost')
  t.equal(after.size, ok.length + refused.length, 'each plant once')
  t.notOk(lines.some((line) => line.level === 50 && line.msg !== failures[0]!.msg), 'no other error logged')
  t.comment(
    `disk-full drill (${(failures[0]!.err as { code: string }).code}): ${firstRefused} created before the first 503; ` +
      `${ok.length - firstRefused} more 200 and ${refused.length} 503 while full; ${retried.length} retried after freeing space, ` +
      `all 200; 200s lost: ${lost.length}`,
  )
})

t.test('readiness probes the disk only after a write failed for it: a healthy store writes nothing to answer', requires('root'), async (t) => {
  const dataDir = await mountTmpfs(t, 'size=4m')
  const app = await createApp(testConfig({ dataDir, databaseUrl: undefined }))
  t.teardown(() => app.close())
  const { bavail, bsize } = statfsSync(dataDir)
  writeFileSync(join(dataDir, 'ballast'), Buffer.alloc(bavail * bsize - 64 * 1024))
  t.equal((await app.inject({ url: '/health/ready' })).statusCode, 200, 'no write has failed yet: ready on a nearly full disk')
  const create = (id: number) => postPlant(app, { id, name: 'x'.repeat(4000) })
  let id = 1
  while (id < 1000 && (await create(id)).statusCode === 200) id++
  t.ok(id > 1 && id < 1000, `${id - 1} created, then the disk was full`)
  t.equal((await create(id)).statusCode, 503)
  t.equal((await app.inject({ url: '/health/ready' })).statusCode, 503)
  const replay = await create(1)
  t.equal(replay.statusCode, 200, 'a replay writes nothing: still answered on a full disk')
  t.equal((await app.inject({ url: '/health/ready' })).statusCode, 503, 'and says nothing about the disk')
  t.same(
    (await run('ls', ['-A', dataDir])).stdout.split('\n').filter(Boolean).sort(),
    ['ballast', SQLITE_FILE, `${SQLITE_FILE}-shm`, `${SQLITE_FILE}-wal`],
    `the failed probe left no ${PROBE_FILE} behind`,
  )
})

t.test('a read-only data directory stops the start with a message naming DATA_DIR and the reason', requires('root'), async (t) => {
  const readOnly = await mountTmpfs(t, 'ro,size=1m')
  for (const dataDir of [readOnly, join(readOnly, 'data')]) {
    const { code, output } = await runToExit({ NODE_ENV: 'test', PLANT_STORE_TOKENS: TOKEN, DATA_DIR: dataDir })
    t.equal(code, 1, dataDir)
    t.match(output, `plant-store: Refusing to start: DATA_DIR (${dataDir}) cannot be used: EROFS: read-only file system`)
  }
  await t.rejects(createApp(testConfig({ dataDir: readOnly, databaseUrl: undefined })), { name: 'ConfigError', message: /DATA_DIR .*EROFS/ })
})

t.test("another user's data directory, or store file in it, stops the start of a service run as nobody", requires('root'), async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'plant-store-owned-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  chmodSync(dataDir, 0o755) // readable by all, writable by its owner (root) only
  const env = { NODE_ENV: 'test', PLANT_STORE_TOKENS: TOKEN, DATA_DIR: dataDir }
  const directory = await runToExit(env, NOBODY)
  t.equal(directory.code, 1)
  t.match(directory.output, `plant-store: Refusing to start: DATA_DIR (${dataDir}) cannot be used: EACCES: permission denied`)

  // The directory is nobody's now, but the store's file in it is still root's.
  new SQLite(join(dataDir, SQLITE_FILE)).close()
  chownSync(dataDir, NOBODY.uid, NOBODY.gid)
  const file = await runToExit(env, NOBODY)
  t.equal(file.code, 1)
  t.match(file.output, `cannot be used: EACCES: permission denied, access '${join(dataDir, SQLITE_FILE)}'`)
})
