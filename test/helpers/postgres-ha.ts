/**
 * The highly available PostgreSQL of `deploy/postgres-ha/` on this machine: one etcd
 * member, two Patroni nodes (PostgreSQL 15) and HAProxy, each a process of its own on
 * free loopback ports. The shipped files are used as they are, with the steps, users
 * and ownership of docs/deployment.md; only ports and directories change (through
 * `ETCD_*`, `PATRONI_*` and HAProxy's environment variables), as an operator changes them.
 *
 * @module
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import type { TestContext } from './app.ts'
import { freePort } from './machine.ts'
import { waitUntil } from './podman.ts'

const HA_DIR = fileURLToPath(new URL('../../deploy/postgres-ha/', import.meta.url))
/** The programs the cluster needs, each with the Debian package that installs it. */
const TOOLS = {
  '/usr/bin/etcd': 'etcd-server',
  '/usr/bin/patroni': 'patroni',
  '/usr/sbin/haproxy': 'haproxy',
  '/usr/lib/postgresql/15/bin/postgres': 'postgresql-15',
}

interface Running {
  child: ChildProcess
  exited: Promise<unknown>
  output: () => string
}

const baseEnv = (env: Record<string, string>) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  LC_ALL: 'C.UTF-8',
  ...env,
})

/** Spawns a server of the cluster with `env` as its whole environment; the tail of its output is kept. */
function startProcess(command: string, args: string[], env: Record<string, string>, cwd: string): Running {
  const child = spawn(command, args, { env: baseEnv(env), cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const keep = (chunk: Buffer | string) => (output = (output + chunk.toString()).slice(-65536))
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  child.on('error', (error) => keep(`${command}: ${error.message}\n`))
  return { child, exited: new Promise((resolve) => child.on('close', resolve)), output: () => output }
}

/** Runs an operator's command with `env` as its whole environment (what the docs' shell exports). @returns its stdout. */
async function runWith(command: string, args: readonly string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: baseEnv(env), timeout: 30_000 }, (error, stdout, stderr) => {
      // Not error.message: it repeats the arguments, which may hold a password.
      if (error === null) resolve(stdout)
      else
        reject(
          new Error(
            `${command} ${args[0] ?? ''}… failed (${error.killed ? 'killed after 30 s' : `exit ${String(error.code)}`}):\n${stdout}${stderr}`,
          ),
        )
    })
  })
}

/** The fields of /proc/`pid`/stat after the command name (state, ppid, …), or undefined once the process is gone. */
const procStat = (pid: number | string): string[] | undefined => {
  try {
    return /\) (.*)$/s.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1]?.split(' ')
  } catch {
    return undefined
  }
}
/** A zombie counts as gone: nothing may reap it here. */
const gone = (pid: number): boolean => (procStat(pid)?.[0] ?? 'Z') === 'Z'

/** The postmaster of `dataDir` and its children (a postmaster started by Patroni is not Patroni's child). */
function postgresProcesses(dataDir: string): number[] {
  const pidFile = join(dataDir, 'postmaster.pid')
  const postmaster = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0
  if (!(postmaster > 0) || gone(postmaster)) return []
  const children = readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && Number(procStat(pid)?.[1]) === postmaster)
  return [postmaster, ...children.map(Number)]
}

/** uid and gid of user `name`. */
function userIds(name: string): [number, number] {
  const [, uid, gid] = new RegExp(`^${name}:[^:]*:(\\d+):(\\d+):`, 'm').exec(readFileSync('/etc/passwd', 'utf8')) ?? []
  if (uid === undefined) throw new Error(`no ${name} user (the Debian packages create it)`)
  return [Number(uid), Number(gid)]
}

/** The rows of `patronictl list`'s table (`| Member | Host | Role | State | …`): member, role, state. */
function parseList(table: string): Array<{ member: string; role: string; state: string }> {
  const rows = table
    .split('\n')
    .flatMap((line) => (line.startsWith('|') ? [line.split('|').map((cell) => cell.trim())] : []))
  const header = rows.find((row) => row.includes('Member'))
  if (header === undefined) throw new Error(`patronictl list printed no table:\n${table}`)
  const [member, role, state] = ['Member', 'Role', 'State'].map((name) => header.indexOf(name)) as [
    number,
    number,
    number,
  ]
  return rows
    .filter((row) => row !== header)
    .map((row) => ({ member: row[member]!, role: row[role]!, state: row[state]! }))
}

/** A running cluster of {@link startCluster}. */
export type HaCluster = Awaited<ReturnType<typeof startCluster>>
/** A Patroni node: Patroni and its PostgreSQL. */
export type PatroniNode = HaCluster['nodes'][number]

/**
 * Starts etcd (`etcd` user, `etcd.env`), `patroni-1.yml` and `patroni-2.yml` (`postgres` user) and HAProxy; waits for a Leader with a Sync Standby,
 * creates the application's role and database with `psql`; all removed at teardown. @throws without root or a package, or after `timeoutMs` (with every part's output).
 */
export async function startCluster(t: TestContext, timeoutMs = 180_000) {
  const missing = Object.entries(TOOLS).flatMap(([path, pkg]) => (existsSync(path) ? [] : [pkg]))
  if (missing.length > 0 || userInfo().uid !== 0)
    throw new Error(`the cluster needs root (Patroni runs as postgres) and apt-get install ${missing.join(' ')}`)
  const [[uid, gid], [etcdUid, etcdGid]] = [userIds('postgres'), userIds('etcd')]
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-ha-'))
  chmodSync(dir, 0o755)
  const [etcdDir, pgDir] = [join(dir, 'etcd'), join(dir, 'postgres')]
  const ownDir = (path: string, owner: number, group: number) => (
    mkdirSync(path, { mode: 0o700 }),
    chownSync(path, owner, group)
  )
  ownDir(etcdDir, etcdUid, etcdGid)
  ownDir(pgDir, uid, gid)
  const ports = new Set<number>()
  while (ports.size < 8) ports.add(await freePort())
  const [etcdClient, etcdPeer, haproxyPort, statsPort, ...nodePorts] = [...ports] as [
    number,
    number,
    number,
    number,
    ...number[],
  ]
  const parts: Running[] = []
  type Node = ReturnType<typeof patroniNode>
  const nodes: Node[] = []
  t.teardown(async () => {
    for (const node of nodes) await node.kill()
    for (const { child, exited } of parts) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
    // A node killed with -9 leaves its socket and lock file in Debian's socket directory.
    for (const node of nodes)
      for (const suffix of ['', '.lock'])
        rmSync(`/var/run/postgresql/.s.PGSQL.${node.pgPort}${suffix}`, { force: true })
  })

  // Debian's etcd unit: User=etcd, EnvironmentFile=/etc/default/etcd (etcd.env: KEY=value lines).
  const etcd = Object.fromEntries(
    [...readFileSync(join(HA_DIR, 'etcd.env'), 'utf8').matchAll(/^\s*([A-Z0-9_]+)=(.*)$/gm)].map((match) => [
      match[1]!,
      match[2]!.trim(),
    ]),
  )
  const [peer, client] = [`http://127.0.0.1:${etcdPeer}`, `http://127.0.0.1:${etcdClient}`]
  const asUser = (id: number, group: number, command: string) => [
    `--reuid=${id}`,
    `--regid=${group}`,
    '--init-groups',
    command,
  ]
  const urls = {
    ETCD_LISTEN_CLIENT_URLS: client,
    ETCD_ADVERTISE_CLIENT_URLS: client,
    ETCD_LISTEN_PEER_URLS: peer,
    ETCD_INITIAL_ADVERTISE_PEER_URLS: peer,
  }
  const etcdEnv = {
    ...etcd,
    ...urls,
    ETCD_DATA_DIR: join(etcdDir, 'plant-store-ha'),
    ETCD_INITIAL_CLUSTER: `${etcd.ETCD_NAME}=${peer}`,
  }
  parts.push(startProcess('setpriv', asUser(etcdUid, etcdGid, '/usr/bin/etcd'), etcdEnv, dir))

  const [superuser, replication, appPassword] = [1, 2, 3].map(() => randomBytes(16).toString('hex')) as [
    string,
    string,
    string,
  ]
  function patroniNode(n: number) {
    const [pgPort, restPort] = [nodePorts[(n - 1) * 2]!, nodePorts[(n - 1) * 2 + 1]!]
    const dataDir = join(pgDir, `node${n}`)
    const [rest, postgres] = [`127.0.0.1:${restPort}`, `127.0.0.1:${pgPort}`]
    // Its overrides, and the passwords as the docs' shell exports them.
    const env = {
      HOME: pgDir,
      PATRONI_SUPERUSER_PASSWORD: superuser,
      PATRONI_REPLICATION_PASSWORD: replication,
      PATRONI_ETCD3_HOSTS: `127.0.0.1:${etcdClient}`,
    }
    Object.assign(env, {
      PATRONI_RESTAPI_LISTEN: rest,
      PATRONI_RESTAPI_CONNECT_ADDRESS: rest,
      PATRONI_POSTGRESQL_LISTEN: postgres,
      PATRONI_POSTGRESQL_CONNECT_ADDRESS: postgres,
    })
    Object.assign(env, {
      PATRONI_POSTGRESQL_DATA_DIR: dataDir,
      PATRONI_POSTGRESQL_PGPASS: join(pgDir, `node${n}.pgpass`),
    })
    let patroni: Running | undefined
    let earlier = ''
    const node = {
      /** `node1`, `node2`, as in the shipped files. */
      name: `node${n}`,
      pgPort,
      restPort,
      env,
      /** Starts Patroni (as postgres: PostgreSQL refuses root) on the node's data directory. */
      start() {
        earlier += patroni?.output() ?? ''
        patroni = startProcess(
          'setpriv',
          [...asUser(uid, gid, '/usr/bin/patroni'), join(HA_DIR, `patroni-${n}.yml`)],
          env,
          pgDir,
        )
      },
      /** `kill -9` of Patroni, the postmaster and every backend at once (a machine that dies); resolves once all are gone. */
      async kill() {
        const pids = [
          ...(patroni && !gone(patroni.child.pid!) ? [patroni.child.pid!] : []),
          ...postgresProcesses(dataDir),
        ]
        spawnSync('kill', ['-KILL', ...pids.map(String)]) // all at once; one that exited meanwhile (a backend) is no error
        await waitUntil(`${node.name}'s processes to be gone`, 10_000, async () => pids.every(gone))
      },
      /** What Patroni and PostgreSQL wrote (the last 64 KiB). */
      output: () => (earlier + (patroni?.output() ?? '')).slice(-65536),
    }
    node.start()
    return node
  }
  nodes.push(patroniNode(1), patroniNode(2))
  const [node1, node2] = nodes as [Node, Node]
  const haproxyEnv = {
    PRIMARY_PORT: `${haproxyPort}`,
    STATS_PORT: `${statsPort}`,
    NODE1_PORT: `${node1.pgPort}`,
    NODE1_REST_PORT: `${node1.restPort}`,
  }
  parts.push(
    startProcess(
      '/usr/sbin/haproxy',
      ['-db', '-f', join(HA_DIR, 'haproxy.cfg')],
      { ...haproxyEnv, NODE2_PORT: `${node2.pgPort}`, NODE2_REST_PORT: `${node2.restPort}` },
      dir,
    ),
  )

  const members = async (): Promise<Array<{ name: string; role: string; state: string; lag?: unknown }>> => {
    for (const node of nodes) {
      const response = await fetch(`http://127.0.0.1:${node.restPort}/cluster`, {
        signal: AbortSignal.timeout(2000),
      }).catch(() => undefined)
      if (response?.ok) return ((await response.json()) as { members: [] }).members
    }
    throw new Error('no Patroni node answers')
  }
  /** HAProxy's view, from its CSV stats: server name → UP, DOWN, … */
  const routes = async (): Promise<Record<string, string>> => {
    const csv = await (await fetch(`http://127.0.0.1:${statsPort}/;csv`, { signal: AbortSignal.timeout(2000) })).text()
    return Object.fromEntries(
      [...csv.matchAll(/^primary,(node\d),(?:[^,\n]*,){15}([^,\n]*)/gm)].map((match) => [match[1], match[2]]),
    )
  }
  const named = new Map<string, { output: () => string }>([
    ...nodes.map((node) => [node.name, node] as const),
    ['etcd', parts[0]!],
    ['haproxy', parts[1]!],
  ])
  const url = (port: number) => `postgres://plant_store:${appPassword}@127.0.0.1:${port}/plant_store`
  const cluster = {
    nodes,
    /** `postgres://` URL of the application's role and database through HAProxy. */
    databaseUrl: url(haproxyPort),
    /** The node Patroni's REST API reports as leader. @throws when there is none. */
    async leader(): Promise<Node> {
      const now = await members()
      const node = nodes.find((candidate) =>
        now.some((member) => member.name === candidate.name && member.role === 'leader'),
      )
      if (node === undefined) throw new Error(`no leader: ${JSON.stringify(now)}`)
      return node
    },
    /**
     * Waits until `patronictl list` (as the docs run it) shows `leader` as Leader and the other as Sync Standby, running, with no lag (Patroni's API),
     * and HAProxy routes to `leader` only. @throws after `timeoutMs`, with what was last seen and every part's output.
     */
    async waitUntilHealthy(leader: Node, timeoutMs: number): Promise<void> {
      let last: unknown
      const probe = async () => {
        const list = runWith('/usr/bin/patronictl', ['-c', join(HA_DIR, 'patroni-1.yml'), 'list'], node1.env).then(
          parseList,
          (error: Error) => error.message,
        )
        const [listed, now, routed] = await Promise.all([
          list,
          members().catch(() => []),
          routes().catch(() => ({}) as Record<string, string>),
        ])
        last = { listed, members: now, haproxy: routed }
        const role = (name: string) => (name === leader.name ? 'Leader' : 'Sync Standby')
        return (
          typeof listed !== 'string' &&
          listed.length === nodes.length &&
          listed.every((row) => row.state === 'running' && row.role === role(row.member)) &&
          now.length === nodes.length &&
          now.every((member) => member.name === leader.name || member.lag === 0) &&
          nodes.every((node) => routed[node.name] === (node === leader ? 'UP' : 'DOWN'))
        )
      }
      await waitUntil(`${leader.name} to lead with a Sync Standby, and HAProxy to route to it`, timeoutMs, probe).catch(
        (error: Error) => {
          throw new Error(
            `${error.message}; last seen ${JSON.stringify(last)}\n${[...named].map(([name, part]) => `--- ${name}:\n${part.output().slice(-6000)}`).join('\n')}`,
          )
        },
      )
    },
    /** Runs `sql` as the application's role on `node` directly (not through HAProxy). */
    async queryOn<Row extends pg.QueryResultRow>(node: Node, sql: string, values?: unknown[]): Promise<Row[]> {
      const client = new pg.Client({ connectionString: url(node.pgPort) })
      await client.connect()
      return client
        .query<Row>(sql, values)
        .then((result) => result.rows)
        .finally(() => client.end())
    },
  }

  // Whichever node wins the first election leads.
  let leader: Node | undefined
  await waitUntil(
    'a leader',
    timeoutMs,
    async () => (leader = await cluster.leader().catch(() => undefined)) !== undefined,
  )
  await cluster.waitUntilHealthy(leader!, timeoutMs)
  // The docs' psql step: through HAProxy, the superuser's password from the environment.
  const sql = [
    '-c',
    `create role plant_store login password '${appPassword}'`,
    '-c',
    'create database plant_store owner plant_store',
  ]
  await runWith('/usr/bin/psql', ['-h', '127.0.0.1', '-p', `${haproxyPort}`, '-U', 'postgres', ...sql], {
    PGPASSWORD: superuser,
  })
  return cluster
}
