/** `deploy/postgres-ha/` on loopback ports: etcd, two Patroni nodes and HAProxy, as docs/deployment.md runs them. */
import { execFile, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseEnv } from 'node:util'
import type pg from 'pg'
import { query, type TestContext } from './app.ts'
import { freePort } from './machine.ts'
import { waitUntil } from './podman.ts'

const HA_DIR = fileURLToPath(new URL('../../deploy/postgres-ha/', import.meta.url))
const TOOLS = {
  '/usr/bin/etcd': 'etcd-server',
  '/usr/bin/patroni': 'patroni',
  '/usr/sbin/haproxy': 'haproxy',
  '/usr/lib/postgresql/15/bin/postgres': 'postgresql-15',
}

const baseEnv = (env: Record<string, string>) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  LC_ALL: 'C.UTF-8',
  ...env,
})

/** Spawns `command` as `uid`:`gid` with only `env`, keeping 64 KiB of output. */
function startAs([uid, gid]: number[], command: string[], env: Record<string, string>, cwd: string) {
  const ids = [`--reuid=${uid}`, `--regid=${gid}`, '--init-groups']
  const child = spawn('setpriv', [...ids, ...command], { env: baseEnv(env), cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const keep = (chunk: Buffer | string) => (output = (output + chunk.toString()).slice(-65536))
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  child.on('error', (error) => keep(`${command[0]}: ${error.message}\n`))
  return { child, exited: new Promise((resolve) => child.on('close', resolve)), output: () => output }
}

/** Runs a command with only `env`. @returns its stdout. */
function runWith(command: string, args: readonly string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: baseEnv(env), timeout: 30_000 }, (error, stdout, stderr) => {
      // error.message may hold a password.
      if (error === null) resolve(stdout)
      else reject(new Error(`${command} ${args[0]}… failed (exit ${String(error.code)}):\n${stdout}${stderr}`))
    })
  })
}

/** /proc/`pid`/stat after the name (state, ppid, …). */
const procStat = (pid: number | string) => {
  try {
    return /\) (.*)$/s.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1]?.split(' ')
  } catch {
    return undefined
  }
}
/** A zombie counts as gone: nothing here reaps it. */
const gone = (pid: number) => (procStat(pid)?.[0] ?? 'Z') === 'Z'

/** The postmaster of `dataDir` and its children. */
function postgresProcesses(dataDir: string) {
  const pidFile = join(dataDir, 'postmaster.pid')
  const postmaster = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0
  if (!(postmaster > 0) || gone(postmaster)) return []
  const children = readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && Number(procStat(pid)?.[1]) === postmaster)
  return [postmaster, ...children.map(Number)]
}

function userIds(name: string) {
  const [, uid, gid] = new RegExp(`^${name}:[^:]*:(\\d+):(\\d+):`, 'm').exec(readFileSync('/etc/passwd', 'utf8')) ?? []
  if (uid === undefined) throw new Error(`no ${name} user (the Debian packages create it)`)
  return [Number(uid), Number(gid)]
}

/** A Patroni node of {@link startCluster}: Patroni and its PostgreSQL. */
export type PatroniNode = Awaited<ReturnType<typeof startCluster>>['nodes'][number]

/** Starts the cluster (removed at teardown) until a Leader has a Sync Standby; creates the app's database. */
export async function startCluster(t: TestContext, timeoutMs = 180_000) {
  const missing = Object.entries(TOOLS).flatMap(([path, pkg]) => (existsSync(path) ? [] : [pkg]))
  if (missing.length > 0 || userInfo().uid !== 0)
    throw new Error(`the cluster needs root (Patroni runs as postgres) and apt-get install ${missing.join(' ')}`)
  const [postgresIds, etcdIds] = [userIds('postgres'), userIds('etcd')]
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-ha-'))
  chmodSync(dir, 0o755)
  const [etcdDir, pgDir] = [join(dir, 'etcd'), join(dir, 'postgres')]
  for (const [owned, [uid = 0, gid = 0]] of new Map([
    [etcdDir, etcdIds],
    [pgDir, postgresIds],
  ])) {
    mkdirSync(owned, { mode: 0o700 })
    chownSync(owned, uid, gid)
  }
  const ports = new Set<number>()
  while (ports.size < 8) ports.add(await freePort())
  const [etcdClient = 0, etcdPeer = 0, haproxyPort = 0, statsPort = 0, ...nodePorts] = [...ports]
  const parts: Array<ReturnType<typeof startAs>> = []
  type Node = ReturnType<typeof patroniNode>
  const nodes: Node[] = []
  t.teardown(async () => {
    for (const node of nodes) await node.kill()
    for (const { child, exited } of parts) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
    // kill -9 leaves the socket and its lock.
    for (const { pgPort } of nodes)
      for (const suffix of ['', '.lock']) rmSync(`/var/run/postgresql/.s.PGSQL.${pgPort}${suffix}`, { force: true })
  })

  const etcd = parseEnv(readFileSync(join(HA_DIR, 'etcd.env'), 'utf8'))
  const [peer, client] = [`http://127.0.0.1:${etcdPeer}`, `http://127.0.0.1:${etcdClient}`]
  const etcdEnv = {
    ...etcd,
    ETCD_LISTEN_CLIENT_URLS: client,
    ETCD_ADVERTISE_CLIENT_URLS: client,
    ETCD_LISTEN_PEER_URLS: peer,
    ETCD_INITIAL_ADVERTISE_PEER_URLS: peer,
    ETCD_DATA_DIR: join(etcdDir, 'plant-store-ha'),
    ETCD_INITIAL_CLUSTER: `${etcd.ETCD_NAME}=${peer}`,
  }
  parts.push(startAs(etcdIds, ['/usr/bin/etcd'], etcdEnv, dir))

  const [superuser = '', replication = '', appPassword = ''] = [1, 2, 3].map(() => randomBytes(16).toString('hex'))
  function patroniNode(n: number) {
    const [pgPort = 0, restPort = 0] = nodePorts.slice(2 * n - 2)
    const dataDir = join(pgDir, `node${n}`)
    const [rest, postgres] = [`127.0.0.1:${restPort}`, `127.0.0.1:${pgPort}`]
    const env = {
      HOME: pgDir,
      PATRONI_SUPERUSER_PASSWORD: superuser,
      PATRONI_REPLICATION_PASSWORD: replication,
      PATRONI_ETCD3_HOSTS: `127.0.0.1:${etcdClient}`,
      PATRONI_RESTAPI_LISTEN: rest,
      PATRONI_RESTAPI_CONNECT_ADDRESS: rest,
      PATRONI_POSTGRESQL_LISTEN: postgres,
      PATRONI_POSTGRESQL_CONNECT_ADDRESS: postgres,
      PATRONI_POSTGRESQL_DATA_DIR: dataDir,
      PATRONI_POSTGRESQL_PGPASS: join(pgDir, `node${n}.pgpass`),
    }
    let patroni: ReturnType<typeof startAs> | undefined
    let earlier = ''
    const node = {
      name: `node${n}`,
      pgPort,
      restPort,
      env,
      start() {
        earlier += patroni?.output() ?? ''
        patroni = startAs(postgresIds, ['/usr/bin/patroni', join(HA_DIR, `patroni-${n}.yml`)], env, pgDir)
      },
      /** `kill -9` of Patroni and PostgreSQL at once. */
      async kill() {
        const patroniPid = patroni?.child.pid
        const pids = [...(patroniPid && !gone(patroniPid) ? [patroniPid] : []), ...postgresProcesses(dataDir)]
        spawnSync('kill', ['-KILL', ...pids.map(String)]) // a backend that exited meanwhile is no error
        await waitUntil(`${node.name}'s processes to be gone`, 10_000, async () => pids.every(gone))
      },
      output: () => (earlier + (patroni?.output() ?? '')).slice(-65536),
    }
    node.start()
    return node
  }
  nodes.push(patroniNode(1), patroniNode(2))
  const haproxyEnv = { PRIMARY_PORT: `${haproxyPort}`, STATS_PORT: `${statsPort}` }
  for (const [i, { pgPort, restPort }] of nodes.entries())
    Object.assign(haproxyEnv, { [`NODE${i + 1}_PORT`]: `${pgPort}`, [`NODE${i + 1}_REST_PORT`]: `${restPort}` })
  parts.push(startAs([0, 0], ['/usr/sbin/haproxy', '-db', '-f', join(HA_DIR, 'haproxy.cfg')], haproxyEnv, dir))

  const get = (port: number, path: string) =>
    fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2000) })
  type Member = { name: string; role: string; lag?: unknown }
  const members = async () => {
    for (const { restPort } of nodes) {
      const response = await get(restPort, '/cluster').catch(() => undefined)
      if (response?.ok) return ((await response.json()) as { members: Member[] }).members
    }
    throw new Error('no Patroni node answers')
  }
  /** HAProxy's view, from its CSV stats: server name → UP, DOWN, … */
  const routes = async (): Promise<Record<string, string>> => {
    const csv = await (await get(statsPort, '/;csv')).text()
    return Object.fromEntries(
      [...csv.matchAll(/^primary,(node\d),(?:[^,\n]*,){15}([^,\n]*)/gm)].map((m) => [m[1], m[2]]),
    )
  }
  const outputs = () =>
    [...nodes, { name: 'etcd', ...parts[0]! }, { name: 'haproxy', ...parts[1]! }]
      .map((part) => `--- ${part.name}:\n${part.output().slice(-6000)}`)
      .join('\n')
  const url = (port: number) => `postgres://plant_store:${appPassword}@127.0.0.1:${port}/plant_store`
  const cluster = {
    nodes,
    /** The app's database through HAProxy. */
    databaseUrl: url(haproxyPort),
    /** The node Patroni reports as leader. @throws when none. */
    async leader() {
      const now = await members()
      const node = nodes.find(({ name }) => now.some((member) => member.name === name && member.role === 'leader'))
      if (node === undefined) throw new Error(`no leader: ${JSON.stringify(now)}`)
      return node
    },
    /** Until `patronictl list` shows `leader` and a Sync Standby without lag, HAProxy routing to it. */
    async waitUntilHealthy(leader: Node, timeoutMs: number) {
      let last: unknown
      const patronictl = ['-c', join(HA_DIR, 'patroni-1.yml'), 'list', '--format', 'json']
      const probe = async () => {
        const [listed, now, routed] = await Promise.all([
          runWith('/usr/bin/patronictl', patronictl, nodes[0]!.env).then(
            (json) => JSON.parse(json) as Array<Record<string, string>>,
            (error: Error) => error.message,
          ),
          members().catch(() => []),
          routes().catch(() => ({}) as Record<string, string>),
        ])
        last = { listed, members: now, haproxy: routed }
        const role = (name?: string) => (name === leader.name ? 'Leader' : 'Sync Standby')
        return (
          typeof listed !== 'string' &&
          listed.length === nodes.length &&
          listed.every((row) => row.State === 'running' && row.Role === role(row.Member)) &&
          now.length === nodes.length &&
          now.every((member) => member.name === leader.name || member.lag === 0) &&
          nodes.every((node) => routed[node.name] === (node === leader ? 'UP' : 'DOWN'))
        )
      }
      await waitUntil(`${leader.name} to lead with a Sync Standby, HAProxy routing to it`, timeoutMs, probe).catch(
        (error: Error) => {
          throw new Error(`${error.message}; last seen ${JSON.stringify(last)}\n${outputs()}`)
        },
      )
    },
    /** Runs `sql` as the app's role on `node`, not through HAProxy. */
    queryOn: <Row extends pg.QueryResultRow>(node: Node, sql: string, values?: unknown[]) =>
      query<Row>(url(node.pgPort), sql, values),
  }

  let leader: Node | undefined
  await waitUntil(
    'a leader',
    timeoutMs,
    async () => (leader = await cluster.leader().catch(() => undefined)) !== undefined,
  )
  await cluster.waitUntilHealthy(leader!, timeoutMs)
  const sql = [
    `create role plant_store login password '${appPassword}'`,
    'create database plant_store owner plant_store',
  ]
  const psql = ['-h', '127.0.0.1', '-p', `${haproxyPort}`, '-U', 'postgres', ...sql.flatMap((s) => ['-c', s])]
  await runWith('/usr/bin/psql', psql, { PGPASSWORD: superuser })
  return cluster
}
