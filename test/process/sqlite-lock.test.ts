/** Another process holds the embedded store's write lock while clients create: the event loop never waits on it. */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { postPlant } from '../helpers/post-plant.ts'
import { serviceEnv, startService } from '../helpers/process.ts'
import { SQLITE_FILE } from '../../service/store/sqlite.ts'

const HOLD_MS = 12_000

/** Holds `BEGIN IMMEDIATE` on `file` for `HOLD_MS`, as an operator's `sqlite3` session would. */
const HOLDER = `
const SQLite = require('better-sqlite3')
const db = new SQLite(process.argv[1])
db.exec("BEGIN IMMEDIATE; INSERT INTO plant(id, name) VALUES (-777, 'x')")
console.log('locked')
setTimeout(() => { db.exec('ROLLBACK'); db.close(); console.log('released') }, ${HOLD_MS})
`

t.test(
  'a write lock held 12 s by another process: live within 500 ms, creates answered within 8 s, back within 3 s',
  async (t) => {
    const dataDir = join(t.testdir(), 'data')
    const service = await startService(t, serviceEnv(t, { DATA_DIR: dataDir }))
    t.equal((await postPlant(service.url, { id: 1, name: 'before' })).statusCode, 200)

    const holder = spawn(process.execPath, ['-e', HOLDER, join(dataDir, SQLITE_FILE)], {
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    t.teardown(() => void holder.kill('SIGKILL'))
    let holderOutput = ''
    holder.stdout!.on('data', (chunk: Buffer) => (holderOutput += chunk.toString()))
    const exited = once(holder, 'close')
    while (!holderOutput.includes('locked')) await sleep(10)
    const lockedAt = Date.now()
    let releasedAt = Infinity
    void exited.then(() => (releasedAt = Date.now()))

    let done = false
    const creates: Array<{ id: number; sent: number; took: number; status: number; retryAfter?: string }> = []
    let nextId = 1000
    const writer = async () => {
      while (!done) {
        const id = nextId++
        const sent = Date.now()
        const response = await postPlant(service.url, { id, name: `plant ${id}` }, { timeoutMs: 30_000 })
        const retryAfter = response.headers['retry-after'] as string | undefined
        creates.push({ id, sent, took: Date.now() - sent, status: response.statusCode, retryAfter })
      }
    }
    const live: number[] = []
    const liveStatuses = new Set<number>()
    const prober = async () => {
      while (!done) {
        const sent = Date.now()
        liveStatuses.add((await fetch(`${service.url}/health/live`)).status)
        live.push(Date.now() - sent)
        await sleep(50)
      }
    }
    const running = [writer(), writer(), writer(), writer(), prober()]
    await exited
    t.equal(holderOutput.trim(), 'locked\nreleased', 'the holder held the lock and released it')
    // For the creates queued during the lock to be answered, and new ones to succeed.
    await sleep(5000)
    done = true
    await Promise.all(running)

    const slowest = (values: number[]) => Math.max(...values)
    const during = creates.filter((create) => create.sent + create.took < releasedAt)
    const after = creates.filter((create) => create.sent > releasedAt)
    const firstBack = Math.min(...after.filter((c) => c.status === 200).map((c) => c.sent + c.took)) - releasedAt
    t.comment(
      `lock ${releasedAt - lockedAt} ms; /health/live slowest ${slowest(live)} ms of ${live.length}; ` +
        `creates: ${creates.length}, slowest ${slowest(creates.map((c) => c.took))} ms, ` +
        `${creates.filter((c) => c.status === 503).length} × 503; back ${firstBack} ms after the release`,
    )
    t.same([...liveStatuses], [200], 'liveness answered 200')
    t.ok(live.length > 50, 'asked throughout')
    t.ok(slowest(live) <= 500, `/health/live answered within 500 ms (slowest ${slowest(live)} ms)`)
    const late = creates.filter((create) => create.took > 8000)
    t.same(late, [], 'every create answered within 8 s')
    const wrong = creates.filter((c) => !(c.status === 200 || (c.status === 503 && /^\d+$/.test(c.retryAfter ?? ''))))
    t.same(wrong, [], 'every create answered 200, or 503 with Retry-After')
    t.ok(
      during.some((create) => create.status === 503),
      'the lock kept writes out',
    )
    t.ok(firstBack <= 3000, `writes back within 3 s of the release (${firstBack} ms)`)
    t.ok(
      after.every((create) => create.status === 200),
      'every create sent after the release is stored',
    )
    t.equal(await service.stop(), 0)

    const db = new SQLite(join(dataDir, SQLITE_FILE), { readonly: true })
    t.teardown(() => db.close())
    const stored = new Set(db.prepare('select id from plant').pluck().all() as number[])
    const lost = creates.filter((create) => create.status === 200 && !stored.has(create.id))
    t.same(lost, [], 'every plant answered 200 is stored')
    t.notOk(stored.has(-777), "the holder's rolled-back row is not")
  },
)
