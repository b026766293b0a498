/**
 * The highly available PostgreSQL of `deploy/postgres-ha/`, run on this machine for
 * tests: one etcd member, two Patroni nodes (PostgreSQL 15) and HAProxy, each a
 * process of its own, all on free loopback ports under a temporary directory.
 *
 * The shipped files are used as they are, with the steps, users and ownership of
 * docs/deployment.md; only ports and directories change, the way an operator
 * changes them. etcd runs as the `etcd` user with the settings of `etcd.env` (what
 * Debian's etcd unit does with it as /etc/default/etcd; no systemd here), its data
 * directory in one the `etcd` user owns. Patroni runs as `postgres` from
 * `patroni-N.yml` with `PATRONI_*` environment overrides, in a directory `postgres`
 * owns (mode 700); HAProxy from `haproxy.cfg` with the environment variables it
 * names. `patronictl -c patroni-1.yml list` is how the cluster is seen to be
 * ready, and `psql` through HAProxy with `PGPASSWORD` set to the superuser's
 * password creates the application's role and database. Passwords are generated
 * per run.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import type { TestContext } from './app.js'
import { gone, postgresProcesses, type Running, runWith, startProcess, stop } from './ha-processes.js'
import { freePort } from './machine.js'
import { waitUntil } from './podman.js'

/** The shipped cluster files. */
export const HA_DIR = fileURLToPath(new URL('../../deploy/postgres-ha/', import.meta.url))
/** The binaries the cluster needs, each with the Debian package that installs it. */
const TOOLS: ReadonlyArray<[path: string, pkg: string]> = [
  ['/usr/bin/etcd', 'etcd-server'],
  ['/usr/bin/patroni', 'patroni'],
  ['/usr/sbin/haproxy', 'haproxy'],
  ['/usr/lib/postgresql/15/bin/postgres', 'postgresql-15'],
  ['/usr/bin/psql', 'postgresql-client-15'],
]
/** PostgreSQL's default socket directory (Debian): where a killed node leaves its socket behind. */
const SOCKET_DIR = '/var/run/postgresql'

/** What is missing to run the cluster, e.g. `patroni (apt-get install patroni)`; empty when nothing is. */
export function missingForCluster(): string[] {
  const missing = TOOLS.filter(([path]) => !existsSync(path)).map(([path, pkg]) => `${path} (apt-get install ${pkg})`)
  if (userInfo().uid !== 0) missing.push('root (the test runs Patroni as the postgres user)')
  return missing
}

/** A Patroni node: Patroni and its PostgreSQL. */
export interface PatroniNode {
  /** `node1`, `node2`: Patroni's name, as in the shipped files. */
  readonly name: string
  readonly pgPort: number
  readonly restPort: number
  /** Starts Patroni again on the same data directory (after {@link kill}). */
  start(): void
  /** `kill -9` Patroni, the postmaster and every backend at once, as a machine that dies; resolves once all are gone. */
  kill(): Promise<void>
  /** What Patroni and PostgreSQL wrote (the last 64 KiB). */
  output(): string
}

/** A row of `patronictl list`. */
export interface Listed {
  member: string
  /** `Leader`, `Sync Standby`, `Replica`. */
  role: string
  /** `running`, `starting`, `stopped`, … */
  state: string
}

/** A cluster member as Patroni's REST API reports it (`GET /cluster`). */
export interface Member {
  name: string
  role: string
  state: string
  timeline?: number
  lag?: number | string
}

/** A running cluster. */
export interface HaCluster {
  readonly nodes: readonly PatroniNode[]
  /** `postgres://` URL of the application's role and database through HAProxy. */
  readonly databaseUrl: string
  /** The members, from the first node that answers. */
  members(): Promise<Member[]>
  /** `patronictl -c patroni-1.yml list`, as docs/deployment.md runs it: the rows of its table. */
  list(): Promise<Listed[]>
  /**
   * Waits until `patronictl list` shows `leader` as the running Leader and every
   * other node running as `role` (`Sync Standby`, or `Replica` with synchronous
   * mode off): what the docs tell the operator to wait for.
   * @throws after `timeoutMs`, with the last table seen and every part's output.
   */
  waitUntilListed(leader: PatroniNode, role: 'Sync Standby' | 'Replica', timeoutMs: number): Promise<void>
  /**
   * Waits until `leader` leads, every other node follows it as `standbyRole`
   * (`sync_standby`, or `replica` with synchronous mode off) with no lag, and
   * HAProxy routes to `leader` only.
   * @throws after `timeoutMs`, with what was last seen and every part's output.
   */
  waitUntilHealthy(leader: PatroniNode, standbyRole: 'sync_standby' | 'replica', timeoutMs: number): Promise<void>
  /** Runs `sql` as the application's role on `node` directly (not through HAProxy). */
  queryOn<Row extends pg.QueryResultRow>(node: PatroniNode, sql: string, values?: unknown[]): Promise<Row[]>
  /** Changes cluster-wide settings (Patroni's `PATCH /config`), e.g. `{ synchronous_mode: false }`. */
  configure(settings: Record<string, unknown>): Promise<void>
}

/** uid and gid of user `name`, from /etc/passwd. */
function userIds(name: string, pkg: string): [uid: number, gid: number] {
  const [, uid, gid] = new RegExp(`^${name}:[^:]*:(\\d+):(\\d+):`, 'm').exec(readFileSync('/etc/passwd', 'utf8')) ?? []
  if (uid === undefined || gid === undefined) throw new Error(`no ${name} user (Debian creates it with ${pkg})`)
  return [Number(uid), Number(gid)]
}

/** The rows of `patronictl list`'s table (`| Member | Host | Role | State | TL | Lag in MB |`). */
function parseList(table: string): Listed[] {
  const rows = table.split('\n').filter((line) => line.startsWith('|')).map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()))
  const header = rows.find((row) => row.includes('Member'))
  if (header === undefined) throw new Error(`patronictl list printed no table:\n${table}`)
  const [member, role, state] = ['Member', 'Role', 'State'].map((name) => header.indexOf(name)) as [number, number, number]
  return rows.filter((row) => row !== header).map((row) => ({ member: row[member]!, role: row[role]!, state: row[state]! }))
}

/** Reads `etcd.env` (KEY=value lines, `#` comments). */
function envFile(path: string): Record<string, string> {
  const lines = readFileSync(path, 'utf8').split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'))
  return Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]))
}

async function getJson(url: string): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2000) })
  if (!response.ok) throw new Error(`${url}: ${response.status}`)
  return response.json()
}

/**
 * Starts etcd, `deploy/postgres-ha/patroni-1.yml` and `patroni-2.yml`, and HAProxy
 * on free loopback ports; waits until `patronictl list` shows node1 or node2 as the
 * Leader with the other as its Sync Standby, and creates the application's role and
 * database with `psql`. Everything is killed and removed at teardown.
 * @throws when a part does not come up within `timeoutMs` (with its output).
 */
export async function startCluster(t: TestContext, timeoutMs = 180_000): Promise<HaCluster> {
  const [uid, gid] = userIds('postgres', 'the postgresql packages')
  const [etcdUid, etcdGid] = userIds('etcd', 'etcd-server')
  // As on a machine: etcd's data in a directory the etcd user owns (Debian's /var/lib/etcd),
  // Patroni's in one postgres owns, mode 700 (the docs' /var/lib/plant-store-ha).
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-ha-'))
  chmodSync(dir, 0o755)
  const etcdDir = join(dir, 'etcd')
  const pgDir = join(dir, 'postgres')
  for (const [path, owner, group] of [[etcdDir, etcdUid, etcdGid], [pgDir, uid, gid]] as const) {
    mkdirSync(path, { mode: 0o700 })
    chownSync(path, owner, group)
  }
  const ports = new Set<number>()
  while (ports.size < 8) ports.add(await freePort())
  const [etcdClient, etcdPeer, haproxyPort, statsPort, ...nodePorts] = [...ports] as [number, number, number, number, number, number, number, number]
  // One teardown, in order: the nodes, HAProxy, etcd, then their files.
  const parts: { etcd?: Running; haproxy?: Running } = {}
  const nodes: PatroniNode[] = []
  t.teardown(async () => {
    for (const node of nodes) await node.kill()
    await stop(parts.haproxy)
    await stop(parts.etcd)
    rmSync(dir, { recursive: true, force: true })
    // A node killed with -9 leaves its socket and the socket's lock file; these ports are this run's.
    for (const node of nodes) for (const file of [`.s.PGSQL.${node.pgPort}`, `.s.PGSQL.${node.pgPort}.lock`]) rmSync(join(SOCKET_DIR, file), { force: true })
  })

  const etcd = envFile(join(HA_DIR, 'etcd.env'))
  const peer = `http://127.0.0.1:${etcdPeer}`
  // Debian's unit: User=etcd, EnvironmentFile=/etc/default/etcd, ExecStart=/usr/bin/etcd.
  const etcdProcess = (parts.etcd = startProcess('setpriv', [`--reuid=${etcdUid}`, `--regid=${etcdGid}`, '--init-groups', '/usr/bin/etcd'], {
    ...etcd,
    ETCD_DATA_DIR: join(etcdDir, 'plant-store-ha'),
    ETCD_LISTEN_CLIENT_URLS: `http://127.0.0.1:${etcdClient}`,
    ETCD_ADVERTISE_CLIENT_URLS: `http://127.0.0.1:${etcdClient}`,
    ETCD_LISTEN_PEER_URLS: peer,
    ETCD_INITIAL_ADVERTISE_PEER_URLS: peer,
    ETCD_INITIAL_CLUSTER: `${etcd.ETCD_NAME}=${peer}`,
  }, dir))

  const superuser = randomBytes(16).toString('hex')
  const replication = randomBytes(16).toString('hex')
  const appPassword = randomBytes(16).toString('hex')
  /** Each node's environment: its overrides, as the docs' shell exports the passwords. */
  const envs: Array<Record<string, string>> = []
  for (const n of [1, 2]) {
    const pgPort = nodePorts[(n - 1) * 2]!
    const restPort = nodePorts[(n - 1) * 2 + 1]!
    const dataDir = join(pgDir, `node${n}`)
    const env = {
      HOME: pgDir,
      PATRONI_SUPERUSER_PASSWORD: superuser,
      PATRONI_REPLICATION_PASSWORD: replication,
      PATRONI_ETCD3_HOSTS: `127.0.0.1:${etcdClient}`,
      PATRONI_RESTAPI_LISTEN: `127.0.0.1:${restPort}`,
      PATRONI_RESTAPI_CONNECT_ADDRESS: `127.0.0.1:${restPort}`,
      PATRONI_POSTGRESQL_LISTEN: `127.0.0.1:${pgPort}`,
      PATRONI_POSTGRESQL_CONNECT_ADDRESS: `127.0.0.1:${pgPort}`,
      PATRONI_POSTGRESQL_DATA_DIR: dataDir,
      PATRONI_POSTGRESQL_PGPASS: join(pgDir, `node${n}.pgpass`),
    }
    envs.push(env)
    let patroni: Running | undefined
    let earlier = ''
    const node: PatroniNode = {
      name: `node${n}`,
      pgPort,
      restPort,
      start() {
        earlier += patroni?.output() ?? ''
        // PostgreSQL refuses to run as root: Patroni and its PostgreSQL run as postgres.
        patroni = startProcess('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--init-groups', '/usr/bin/patroni', join(HA_DIR, `patroni-${n}.yml`)], env, pgDir)
      },
      async kill() {
        const pids = [...(patroni && !gone(patroni.child.pid!) ? [patroni.child.pid!] : []), ...postgresProcesses(dataDir)]
        for (const pid of pids) process.kill(pid, 'SIGKILL')
        await waitUntil(`${node.name}'s processes to be gone`, 10_000, async () => pids.every(gone))
      },
      output: () => (earlier + (patroni?.output() ?? '')).slice(-65536),
    }
    nodes.push(node)
  }
  for (const node of nodes) node.start()

  const haproxy = (parts.haproxy = startProcess('/usr/sbin/haproxy', ['-db', '-f', join(HA_DIR, 'haproxy.cfg')], {
    PRIMARY_PORT: String(haproxyPort),
    STATS_PORT: String(statsPort),
    NODE1_PORT: String(nodes[0]!.pgPort),
    NODE1_REST_PORT: String(nodes[0]!.restPort),
    NODE2_PORT: String(nodes[1]!.pgPort),
    NODE2_REST_PORT: String(nodes[1]!.restPort),
  }, dir))

  const members = async () => {
    for (const node of nodes) {
      const cluster = await getJson(`http://127.0.0.1:${node.restPort}/cluster`).catch(() => undefined)
      if (cluster) return (cluster as { members: Member[] }).members
    }
    throw new Error('no Patroni node answers')
  }
  /** HAProxy's view: server name → status (UP, DOWN, …), from its CSV stats. */
  const routes = async () => {
    const response = await fetch(`http://127.0.0.1:${statsPort}/;csv`, { signal: AbortSignal.timeout(2000) })
    const rows = (await response.text()).split('\n').map((line) => line.split(','))
    return Object.fromEntries(rows.filter((row) => row[0] === 'primary' && /^node\d$/.test(row[1] ?? '')).map((row) => [row[1], row[17]]))
  }
  const diagnose = () =>
    [['etcd', etcdProcess.output()], ['haproxy', haproxy.output()], ...nodes.map((node) => [node.name, node.output()])].map(([name, text]) => `--- ${name}:\n${text!.slice(-6000)}`).join('\n')

  const url = (port: number, user: string, password: string, database: string) => `postgres://${user}:${password}@127.0.0.1:${port}/${database}`
  // As root, in the shell holding node 1's settings (the docs' shell: the passwords exported).
  const list = async () => parseList(await runWith('/usr/bin/patronictl', ['-c', join(HA_DIR, 'patroni-1.yml'), 'list'], envs[0]!))
  const cluster: HaCluster = {
    nodes,
    databaseUrl: url(haproxyPort, 'plant_store', appPassword, 'plant_store'),
    members,
    list,
    async waitUntilListed(leader, role, ms) {
      let last: unknown
      try {
        await waitUntil(`patronictl list to show ${leader.name} as Leader and the others as ${role}`, ms, async () => {
          const rows = await list().catch((error: Error) => {
            last = error.message
            return []
          })
          if (rows.length > 0) last = rows
          const others = rows.filter((row) => row.member !== leader.name)
          return (
            rows.some((row) => row.member === leader.name && row.role === 'Leader' && row.state === 'running') &&
            others.length === nodes.length - 1 &&
            others.every((row) => row.role === role && row.state === 'running')
          )
        })
      } catch (error) {
        throw new Error(`${(error as Error).message}; last seen ${JSON.stringify(last)}\n${diagnose()}`, { cause: error })
      }
    },
    async waitUntilHealthy(leader, standbyRole, ms) {
      let last: unknown
      try {
        await waitUntil(`${leader.name} to lead with a ${standbyRole}, and HAProxy to route to it`, ms, async () => {
          const [now, routed] = await Promise.all([members().catch(() => []), routes().catch(() => ({}))])
          last = { members: now, haproxy: routed }
          const others = now.filter((member) => member.name !== leader.name)
          return (
            now.some((member) => member.name === leader.name && member.role === 'leader' && member.state === 'running') &&
            others.length === nodes.length - 1 &&
            others.every((member) => member.role === standbyRole && member.state === 'running' && member.lag === 0) &&
            nodes.every((node) => (routed as Record<string, string>)[node.name] === (node === leader ? 'UP' : 'DOWN'))
          )
        })
      } catch (error) {
        throw new Error(`${(error as Error).message}; last seen ${JSON.stringify(last)}\n${diagnose()}`, { cause: error })
      }
    },
    async queryOn(node, sql, values) {
      const client = new pg.Client({ connectionString: url(node.pgPort, 'plant_store', appPassword, 'plant_store') })
      await client.connect()
      try {
        return (await client.query(sql, values)).rows
      } finally {
        await client.end()
      }
    },
    async configure(settings) {
      const response = await fetch(`http://127.0.0.1:${nodes[0]!.restPort}/config`, { method: 'PATCH', body: JSON.stringify(settings), signal: AbortSignal.timeout(5000) })
      if (!response.ok) throw new Error(`PATCH /config: ${response.status} ${await response.text()}`)
    },
  }

  // Whichever node wins the first election leads.
  let leader: PatroniNode | undefined
  await waitUntil('a leader', timeoutMs, async () => {
    const name = (await members().catch(() => [])).find((member) => member.role === 'leader')?.name
    leader = nodes.find((node) => node.name === name)
    return leader !== undefined
  }).catch((error: Error) => {
    throw new Error(`${error.message}\n${diagnose()}`)
  })
  await cluster.waitUntilListed(leader!, 'Sync Standby', timeoutMs)
  // And HAProxy routes to the leader (it checks every second), so psql reaches it.
  await cluster.waitUntilHealthy(leader!, 'sync_standby', timeoutMs)
  // The docs' psql step: through HAProxy, the superuser's password from the environment.
  await runWith('/usr/bin/psql', ['-h', '127.0.0.1', '-p', String(haproxyPort), '-U', 'postgres', '-c', `create role plant_store login password '${appPassword}'`, '-c', 'create database plant_store owner plant_store'], {
    PGPASSWORD: superuser,
  })
  return cluster
}
