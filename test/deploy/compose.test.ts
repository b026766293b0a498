/**
 * `compose.yaml` run as written, with podman-compose (Debian's, 1.0.3): with the
 * secrets it reads (owner-only files, each owned by the user that reads it in its
 * container, in a directory only its owner enters; none readable by any other user
 * in the containers), `up -d` starts
 * PostgreSQL and the replicas, and once every container is healthy each replica
 * stores a plant that the other replays (one database): each read its secrets.
 * `down -v` removes it all.
 *
 * Nothing in compose.yaml is changed for the test. It runs from a directory of the
 * test's own holding a verbatim copy of compose.yaml and the `secrets/` the test
 * makes (so no secret is ever written into the repository), under a
 * project name of its own. The image is the one under test
 * (`test/helpers/podman.ts`), tagged with the name compose.yaml gives the image it
 * builds, so podman-compose finds it and does not build it again; the tag it
 * replaced is put back afterwards.
 * Health checks run on a timer only under systemd; here the test runs them
 * (`podman healthcheck run`) until they pass.
 *
 * What podman-compose 1.0.3 leaves behind or ignores is cleaned up or reported
 * (`t.comment`), not failed: it does not remove the project's network nor the
 * replicas' anonymous volumes (the image's VOLUME /data), and it ignores
 * `stop_grace_period`, `depends_on` conditions and the top-level `name`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { parse } from 'yaml'
import { run } from '../helpers/command.js'
import { postPlant } from '../helpers/post-plant.js'
import { imageUnderTest, podman, waitUntil } from '../helpers/podman.js'

// A cold build of the image takes minutes on 2 cores; compose itself under a minute.
t.setTimeout(20 * 60_000)

const COMPOSE_FILE = fileURLToPath(new URL('../../compose.yaml', import.meta.url))
/** How long the stack may take to become healthy (first start of PostgreSQL included). */
const HEALTHY_TIMEOUT_MS = 120_000

interface ComposeService {
  build?: unknown
  image?: string
  environment?: Record<string, string>
  ports?: string[]
  healthcheck?: unknown
  /** Docker's byte notation, e.g. `512m`. */
  mem_limit?: string
}

/** Bytes of a Compose byte value (`512m`, `1g`). */
const bytes = (value: string): number => Number(/^\d+/.exec(value)![0]) * 1024 ** ' kmg'.indexOf(value.at(-1)!.toLowerCase())
const composeText = readFileSync(COMPOSE_FILE, 'utf8')
const { services, secrets } = parse(composeText, { merge: true }) as { services: Record<string, ComposeService>; secrets: Record<string, { file: string }> }
/** The services built from the Dockerfile: the replicas of the service. */
const replicaServices = Object.keys(services).filter((name) => services[name]!.build !== undefined)
const builtImage = services[replicaServices[0]!]!.image!

/** The uid that reads each secret in its container: the image's node user, or PostgreSQL's postgres user. */
const SECRET_OWNERS: Record<string, number> = { plant_store_tokens: 1000, database_url: 1000, postgres_password: 999 }

/**
 * Writes the secrets compose.yaml reads (its top-level `secrets`) under `dir`: a token,
 * and a random password with the URL of compose.yaml's PostgreSQL user and database;
 * each file readable by its owner only, owned by the uid that reads it, in a directory
 * only its owner enters. @returns the token.
 */
function makeSecrets(t: Test, dir: string): string {
  const password = randomBytes(24).toString('hex')
  const token = randomBytes(32).toString('base64url')
  const postgres = Object.entries(services).find(([, service]) => service.environment?.POSTGRES_PASSWORD_FILE !== undefined)!
  const { POSTGRES_USER: user, POSTGRES_DB: database } = postgres[1].environment!
  const values: Record<string, string> = { plant_store_tokens: token, database_url: `postgres://${user}:${password}@${postgres[0]}:5432/${database}`, postgres_password: password }
  t.strictSame(Object.keys(secrets).sort(), Object.keys(values).sort(), 'the secrets compose.yaml reads')
  for (const [name, { file }] of Object.entries(secrets)) {
    const path = join(dir, file)
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    writeFileSync(path, values[name]!, { mode: 0o400 })
    chownSync(path, SECRET_OWNERS[name]!, SECRET_OWNERS[name]!)
  }
  return token
}

/** How long a command of the test may take (`podman-compose up` included). */
const COMMAND_TIMEOUT_MS = 180_000

const project = `plant-store-test-compose-${randomBytes(4).toString('hex')}`
const dir = mkdtempSync(join(tmpdir(), 'plant-store-compose-'))
copyFileSync(COMPOSE_FILE, join(dir, 'compose.yaml'))
/** `podman-compose` on the copy, under the test's project name. @returns its output (standard output, then error). */
const compose = async (...args: string[]): Promise<string> => {
  const { stdout, stderr } = await run('podman-compose', ['--project-name', project, '--file', join(dir, 'compose.yaml'), ...args], { cwd: dir, timeoutMs: COMMAND_TIMEOUT_MS, install: 'apt-get install podman-compose' })
  return `${stdout}${stderr}`
}

/** The project's containers: name and compose service of each. */
async function containers(): Promise<Array<{ name: string; service: string }>> {
  const listed = JSON.parse(await podman(['ps', '--all', '--filter', `label=io.podman.compose.project=${project}`, '--format', 'json'])) as Array<{ Names: string[]; Labels: Record<string, string> }>
  return listed.map((entry) => ({ name: entry.Names[0]!, service: entry.Labels['com.docker.compose.service']! }))
}

/** Anonymous volumes of the project's containers, seen while they exist: podman-compose 1.0.3 does not remove them. */
const anonymousVolumes = new Set<string>()
async function noteAnonymousVolumes(): Promise<void> {
  for (const { name } of await containers()) {
    const mounts = JSON.parse(await podman(['inspect', '--format', '{{json .Mounts}}', name])) as Array<{ Type: string; Name?: string }>
    for (const mount of mounts) if (mount.Type === 'volume' && /^[0-9a-f]{64}$/.test(mount.Name ?? '')) anonymousVolumes.add(mount.Name!)
  }
}

// Teardown, registered before anything starts, and run whatever failed: the stack
// down with its volumes, what podman-compose leaves (containers of a failed `up`,
// anonymous volumes, the network), the secrets, and the image tag as it was.
const previousImage = await podman(['image', 'inspect', '--format', '{{.Id}}', builtImage]).catch(() => undefined)
t.teardown(async () => {
  await noteAnonymousVolumes().catch(() => {})
  await compose('down', '--volumes').catch(() => {})
  for (const { name } of await containers().catch(() => [])) await podman(['rm', '--force', '--volumes', '--time', '0', name]).catch(() => {})
  const volumes = (await podman(['volume', 'ls', '--quiet', '--filter', `label=io.podman.compose.project=${project}`]).catch(() => '')).split('\n').filter(Boolean)
  for (const volume of [...volumes, ...anonymousVolumes]) await podman(['volume', 'rm', '--force', volume]).catch(() => {})
  await podman(['network', 'rm', '--force', `${project}_default`]).catch(() => {})
  rmSync(dir, { recursive: true, force: true })
  await (previousImage === undefined ? podman(['untag', builtImage, builtImage]) : podman(['tag', previousImage, builtImage])).catch(() => {})
})

t.test(`compose.yaml with podman-compose: its secrets, up, healthy, a plant on each of ${replicaServices.join(', ')} seen by the other, down -v`, async (t) => {
  t.ok(replicaServices.length >= 2, `replicas built from the Dockerfile: ${replicaServices.join(', ')}`)
  await podman(['tag', await imageUnderTest(), builtImage])
  const token = makeSecrets(t, dir)

  const started = Date.now()
  // podman-compose goes on when a container fails to start, and exits 0: what podman said is in its output.
  const up = await compose('up', '--detach')
  await noteAnonymousVolumes()
  const running = await containers()
  t.same(running.map((container) => container.service).sort(), Object.keys(services).sort(), 'one container per service')
  for (const { name, service } of running) {
    if (services[service]!.healthcheck === undefined) continue
    // Until the first passing probe; a replica may restart (restart: unless-stopped) while PostgreSQL initializes.
    await waitUntil(`${name} to be healthy`, HEALTHY_TIMEOUT_MS, async () => {
      if ((await podman(['inspect', '--format', '{{.State.Status}}', name])) === 'created') {
        throw new Error(`${name} never started: ${up.split('\n').filter((line) => line.startsWith('Error') && !line.includes('no such volume')).join('; ')}`)
      }
      await podman(['healthcheck', 'run', name]).catch(() => {})
      return (await podman(['inspect', '--format', '{{.State.Health.Status}}', name])) === 'healthy'
    })
  }
  t.comment(`up and healthy in ${Date.now() - started} ms`)

  const replicas = await Promise.all(
    replicaServices.map(async (service) => {
      const { name } = running.find((container) => container.service === service)!
      return { service, name, url: `http://${await podman(['port', name, '3000/tcp'])}` }
    }),
  )
  for (const replica of replicas) {
    t.match(replica.url, /^http:\/\/127\.0\.0\.1:\d+$/, `${replica.service} is published on 127.0.0.1 only: ${replica.url}`)
    const status = await podman(['exec', replica.name, 'cat', '/proc/1/status'])
    t.match(status, /^Uid:\s+1000\s/m, `${replica.service}: uid 1000`)
    t.equal(await podman(['exec', replica.name, 'stat', '-c', '%u %a', '/run/secrets/plant_store_tokens', '/run/secrets/database_url']), '1000 400\n1000 400', `${replica.service}: its secrets as on the host, owner uid 1000, mode 0400`)
    await t.rejects(podman(['exec', '--user', '1001', replica.name, 'cat', '/run/secrets/plant_store_tokens']), `${replica.service}: another user of the container cannot read the tokens`)
    t.match(status, /^CapEff:\s+0+$/m, `${replica.service}: no capabilities (cap_drop)`)
    t.match(status, /^NoNewPrivs:\s+1$/m, `${replica.service}: no privilege gain (security_opt)`)
    t.equal(await podman(['inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', replica.name]), 'true', `${replica.service}: read-only root (read_only)`)
    const memory = services[replica.service]!.mem_limit
    t.ok(memory, `${replica.service} has a mem_limit`)
    t.equal(Number(await podman(['inspect', '--format', '{{.HostConfig.Memory}}', replica.name])), bytes(memory ?? '0'), `${replica.service}: its memory is limited to ${memory}`)
    const pids = Number(await podman(['inspect', '--format', '{{.HostConfig.PidsLimit}}', replica.name]))
    t.ok(pids > 0 && pids <= 2048, `${replica.service}: a process limit (${pids}; pids_limit, or podman's default where podman-compose drops it)`)
    t.comment(`${replica.service}: restarted ${await podman(['inspect', '--format', '{{.RestartCount}}', replica.name])} times before healthy; stop timeout ${await podman(['inspect', '--format', '{{.Config.StopTimeout}}', replica.name])} s`)
  }

  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const plants = replicas.map((replica, index) => ({ replica, plant: { id: index + 1, name: `Fern of ${replica.service}`, tag: 'compose' } }))
  const created = await Promise.all(plants.map(({ replica, plant }) => postPlant(replica.url, plant, { headers })))
  for (const [index, { replica }] of plants.entries()) t.equal(created[index]!.statusCode, 200, `${replica.service} creates a plant: ${created[index]!.body}`)
  for (const [index, { replica, plant }] of plants.entries()) {
    const other = replicas[(index + 1) % replicas.length]!
    const replay = await postPlant(other.url, plant, { headers })
    t.same([replay.statusCode, replay.body], [created[index]!.statusCode, created[index]!.body], `the plant created on ${replica.service} replays on ${other.service}: 200, the same body (one database)`)
  }
  t.notMatch(await podman(['logs', replicas[0]!.name]), token, 'the token is never logged')

  await compose('down', '--volumes')
  t.same(await containers(), [], 'down: no container of the project left')
  t.equal(await podman(['volume', 'ls', '--quiet', '--filter', `label=io.podman.compose.project=${project}`]), '', 'down -v: the database volume is gone')
  const exists = async (...args: string[]): Promise<boolean> => podman(args).then(() => true, () => false)
  const volumes: string[] = []
  for (const volume of anonymousVolumes) if (await exists('volume', 'exists', volume)) volumes.push(volume)
  const network = (await exists('network', 'exists', `${project}_default`)) ? `the network ${project}_default` : 'no network'
  t.comment(`left by podman-compose down -v (removed by this test's teardown): ${network}, ${volumes.length} anonymous volumes`)
})
