/**
 * DATA_DIR on real file systems (as root): a tmpfs filling up under load, another user's directory or file. Read-only:
 * process/data-dir.test.ts and the container test.
 */
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import t from 'tap'
import { createApp } from '../../service/app.ts'
import { PROBE_FILE, SQLITE_FILE } from '../../service/store/sqlite.ts'
import { logSink, sqliteFile, testConfig, TOKEN } from '../helpers/app.ts'
import { run } from '../helpers/command.ts'
import { contractViolations } from '../helpers/contract.ts'
import { requires } from '../helpers/needs.ts'
import { postPlant } from '../helpers/post-plant.ts'
import { runToExit } from '../helpers/process.ts'

t.test(
  'a disk that fills up under load: 503 with Retry-After, never 500; every 200 kept, nothing half-stored; readiness ' +
    '503; recovery without restart',
  requires('root'),
  async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'plant-store-fs-'))
    await run('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dataDir])
    t.teardown(async () => {
      await run('umount', ['--lazy', dataDir]) // detached now, whatever order the app closes in
      rmdirSync(dataDir)
    })
    const { stream, lines } = logSink()
    const app = await createApp(testConfig({ dataDir, databaseUrl: undefined }), { level: 'error', stream })
    t.teardown(() => app.close())
    const ready = async () => (await app.inject({ url: '/health/ready' })).statusCode
    // Leave about 1 MiB free: room for some hundreds of plants.
    const { bavail, bsize } = statfsSync(dataDir)
    const ballast = join(dataDir, 'ballast')
    writeFileSync(ballast, Buffer.alloc(bavail * bsize - 1024 * 1024))
    t.equal(await ready(), 200, 'no write has failed yet: ready on a nearly full disk')

    const name = (id: number) => `plant ${id} ${'x'.repeat(1000)}`
    const create = (id: number) => postPlant(app, { id, name: name(id) })
    const answered: { id: number; status: number }[] = []
    const problems = new Set<string>()
    let next = 1
    const refusals = () => answered.filter((answer) => answer.status === 503).length
    const client = async () => {
      while (refusals() < 100) {
        const id = next++
        const response = await create(id)
        answered.push({ id, status: response.statusCode })
        if (response.statusCode !== 503) continue
        if (response.headers['retry-after'] !== '1') problems.add(`Retry-After ${response.headers['retry-after']}`)
        for (const violation of contractViolations(response)) problems.add(violation)
        if (response.json().message !== 'The store is unavailable; retry later') problems.add(response.body)
      }
    }
    await Promise.all(Array.from({ length: 20 }, client))
    t.same(
      [...new Set(answered.map((answer) => answer.status))].sort(),
      [200, 503],
      'every create is answered 200 or 503, never 500',
    )
    t.same([...problems], [], 'every 503 has Retry-After and the Error body')
    const ids = (status: number) => answered.filter((answer) => answer.status === status).map((answer) => answer.id)
    const [ok, refused] = [ids(200), ids(503)]

    t.equal((await app.inject({ url: '/health/live' })).statusCode, 200, 'the process still serves')
    t.equal((await create(ok[0]!)).statusCode, 200, 'a replay writes nothing: still answered on a full disk')
    t.equal(await ready(), 503, 'readiness reports the full disk')
    const failures = lines.filter((line) => line.msg === 'store cannot write to its disk; creates get 503 until it can')
    t.equal(failures.length, 1, 'logged once, with the cause')
    t.match(failures[0], { level: 50, err: { code: /^SQLITE_(FULL|IOERR)/ } })
    t.notOk(readdirSync(dataDir).includes(PROBE_FILE), `the failed disk probe left no ${PROBE_FILE} behind`)

    /** The plants in the store's file, as [id, name] sorted by id, read by a connection of their own. */
    const stored = async () => {
      const db = await sqliteFile(join(dataDir, SQLITE_FILE))
      const query = sql<{ id: number; name: string }>`select id, name from plant order by id`.execute(db)
      return (await query.finally(() => db.destroy())).rows.map((row) => [row.id, row.name])
    }
    const asSent = (ids: number[]) => ids.sort((a, b) => a - b).map((id) => [id, name(id)])
    t.same(await stored(), asSent([...ok]), 'stored: exactly the plants answered 200 (none of the 503s), each as sent')

    rmSync(ballast)
    t.same(
      await app.inject({ url: '/health/ready' }).then((response) => [response.statusCode, response.json()]),
      [200, { status: 'ready' }],
      'space freed: ready again, without a restart',
    )
    const retried = (await Promise.all(refused.map(create))).map((response) => response.statusCode)
    t.ok(retried.length > 0 && retried.every((status) => status === 200), 'every refused create succeeds when retried')
    t.same(await stored(), asSent([...ok, ...refused]), 'no plant answered 200 is lost; each plant once')
    const otherErrors = lines.filter((line) => line.level === 50 && line.msg !== failures[0]!.msg)
    t.same(otherErrors, [], 'no other error logged')
    t.comment(
      `disk full (${(failures[0]!.err as { code: string }).code}): ` +
        `${ok.length} answered 200, ${refused.length} 503, all retried with 200`,
    )
  },
)

t.test(
  "another user's data directory, or store file in it, stops the start of a service run as nobody",
  requires('root'),
  async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'plant-store-owned-'))
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
    chmodSync(dataDir, 0o755) // readable by all, writable by its owner (root) only
    const env = { NODE_ENV: 'test', PLANT_STORE_TOKENS: TOKEN, DATA_DIR: dataDir }
    const nobody = { uid: 65534, gid: 65534 }
    const directory = await runToExit(env, nobody)
    t.equal(directory.code, 1)
    t.match(
      directory.output,
      `plant-store: Refusing to start: DATA_DIR (${dataDir}) cannot be used: EACCES: permission denied`,
    )

    // The directory is nobody's now, but the store's file in it is still root's.
    await (await sqliteFile(join(dataDir, SQLITE_FILE))).destroy()
    chownSync(dataDir, nobody.uid, nobody.gid)
    const file = await runToExit(env, nobody)
    t.equal(file.code, 1)
    t.match(file.output, `cannot be used: EACCES: permission denied, access '${join(dataDir, SQLITE_FILE)}'`)
  },
)
