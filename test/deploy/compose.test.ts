/** `compose.yaml` as written, with podman-compose. */
import { randomBytes } from 'node:crypto'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parse } from 'yaml'
import { run } from '../helpers/command.ts'
import { freePort } from '../helpers/machine.ts'
import { imageUnderTest, podman, waitUntil } from '../helpers/podman.ts'
import { postPlant } from '../helpers/post-plant.ts'

t.setTimeout(20 * 60_000)

const COMPOSE_FILE = fileURLToPath(new URL('../../compose.yaml', import.meta.url))
const composeText = readFileSync(COMPOSE_FILE, 'utf8')
const { services, secrets } = parse(composeText, { merge: true }) as {
  services: Record<string, { build?: unknown; image?: string; healthcheck?: unknown; mem_limit?: string }>
  secrets: Record<string, { file: string }>
}
const replicaServices = Object.keys(services).filter((name) => services[name]!.build !== undefined)
const builtImage = services[replicaServices[0]!]!.image!
/** The header's commands making the secrets. */
const header = composeText
  .split('\n')
  .filter((line) => line.startsWith('#   '))
  .map((line) => line.slice(4).replace(/\s+#.*$/, ''))
const secretCommands = header.slice(
  header.findIndex((line) => line.startsWith('mkdir')),
  header.findLastIndex((line) => line.startsWith('chown')) + 1,
)
const SECRET_OWNERS: Record<string, number> = { plant_store_tokens: 1000, database_url: 1000, postgres_password: 999 }

const project = `plant-store-test-compose-${randomBytes(4).toString('hex')}`
const dir = mkdtempSync(join(tmpdir(), 'plant-store-compose-'))
copyFileSync(COMPOSE_FILE, join(dir, 'compose.yaml'))
/** Free host ports for the replicas: compose.yaml's defaults (3000, 3001) may be taken on this machine. */
const [port1, port2] = [await freePort(), await freePort()]
const hostPorts = {
  PLANT_STORE_1_PORT: String(port1),
  PLANT_STORE_2_PORT: String(port2 === port1 ? await freePort() : port2),
}
const compose = (...args: string[]) =>
  run('podman-compose', ['--project-name', project, '--file', join(dir, 'compose.yaml'), ...args], {
    cwd: dir,
    env: hostPorts,
    timeoutMs: 180_000,
    install: 'apt-get install podman-compose',
  })
const projectFilter = `label=io.podman.compose.project=${project}`
async function containers(): Promise<Array<{ name: string; service: string }>> {
  const listed = JSON.parse(await podman(['ps', '--all', '--filter', projectFilter, '--format', 'json']))
  return listed.map(({ Names, Labels }: { Names: string[]; Labels: Record<string, string> }) => ({
    name: Names[0],
    service: Labels['com.docker.compose.service'],
  }))
}
const inspect = (name: string, template: string) => podman(['inspect', '--format', template, name])
const volumesOf = async () =>
  (await podman(['volume', 'ls', '--quiet', '--filter', projectFilter])).split('\n').filter(Boolean)

/** Anonymous volumes, which podman-compose leaves. */
const anonymousVolumes = new Set<string>()
const previousImage = await podman(['image', 'inspect', '--format', '{{.Id}}', builtImage]).catch(() => undefined)
t.teardown(async () => {
  for (const { name } of await containers().catch(() => []))
    await podman(['rm', '--force', '--volumes', '--time', '0', name]).catch(() => {})
  await compose('down', '--volumes').catch(() => {})
  for (const volume of [...(await volumesOf().catch(() => [])), ...anonymousVolumes])
    await podman(['volume', 'rm', '--force', volume]).catch(() => {})
  await podman(['network', 'rm', '--force', `${project}_default`]).catch(() => {})
  rmSync(dir, { recursive: true, force: true })
  await podman(previousImage ? ['tag', previousImage, builtImage] : ['untag', builtImage, builtImage]).catch(() => {})
})

t.test(
  'compose.yaml with podman-compose: its secrets, up, healthy, ' +
    `a plant on each of ${replicaServices.join(', ')} seen by the other, down -v`,
  async (t) => {
    t.ok(replicaServices.length >= 2, `replicas built from the Dockerfile: ${replicaServices.join(', ')}`)
    await podman(['tag', await imageUnderTest(), builtImage])

    await run('bash', ['-euo', 'pipefail', '-c', secretCommands.join('\n')], { cwd: dir })
    t.equal(statSync(join(dir, 'secrets')).mode & 0o777, 0o700, 'secrets/ mode 0700')
    for (const [name, { file }] of Object.entries(secrets)) {
      const stat = statSync(join(dir, file))
      t.same([stat.mode & 0o777, stat.uid, stat.size > 0], [0o400, SECRET_OWNERS[name], true], file)
    }
    const token = readFileSync(join(dir, 'secrets', 'plant_store_tokens'), 'utf8')

    const started = Date.now()
    // podman-compose goes on when a container fails to start, and exits 0.
    const up = await compose('up', '--detach')
    const upErrors = `${up.stdout}${up.stderr}`.split('\n').filter((line) => line.startsWith('Error'))
    const running = await containers()
    for (const { name } of running)
      for (const volume of (await inspect(name, '{{range .Mounts}}{{.Name}} {{end}}')).split(' '))
        if (/^[0-9a-f]{64}$/.test(volume)) anonymousVolumes.add(volume)
    t.same(running.map(({ service }) => service).sort(), Object.keys(services).sort(), 'one container per service')
    for (const { name, service } of running.filter(({ service }) => services[service]!.healthcheck !== undefined)) {
      await waitUntil(`${name} (${service}) to be healthy`, 120_000, async () => {
        if ((await inspect(name, '{{.State.Status}}')) === 'created')
          throw new Error(`${name} never started: ${upErrors.join('; ')}`)
        await podman(['healthcheck', 'run', name]).catch(() => {})
        return (await inspect(name, '{{.State.Health.Status}}')) === 'healthy'
      })
    }
    t.comment(`up and healthy in ${Date.now() - started} ms`)

    const replicas = await Promise.all(
      replicaServices.map(async (service) => {
        const { name } = running.find((container) => container.service === service)!
        return { service, name, url: `http://${await podman(['port', name, '3000/tcp'])}` }
      }),
    )
    for (const { service, name, url } of replicas) {
      const status = await podman(['exec', name, 'cat', '/proc/1/status'])
      t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, `${service}: 127.0.0.1 only`)
      t.match(status, /^Uid:\s+1000\s/m, `${service}: uid 1000`)
      const secretFiles = ['/run/secrets/plant_store_tokens', '/run/secrets/database_url']
      t.equal(
        await podman(['exec', name, 'stat', '-c', '%u %a', ...secretFiles]),
        '1000 400\n1000 400',
        `${service}: secrets 0400`,
      )
      const denied = await podman(['exec', '--user', '1001', name, 'cat', secretFiles[0]!]).catch(
        (error: { stderr: string }) => error.stderr,
      )
      t.match(denied, /Permission denied/, `${service}: other uid denied`)
      t.match(status, /^CapEff:\s+0+$/m, `${service}: cap_drop`)
      t.match(status, /^NoNewPrivs:\s+1$/m, `${service}: security_opt`)
      t.equal(await inspect(name, '{{.HostConfig.ReadonlyRootfs}}'), 'true', `${service}: read_only`)
      const memory = services[service]!.mem_limit ?? '0'
      const limit = Number(/^\d+/.exec(memory)![0]) * 1024 ** ' kmg'.indexOf(memory.at(-1)!.toLowerCase())
      t.equal(Number(await inspect(name, '{{.HostConfig.Memory}}')), limit, `${service}: mem_limit`)
      const pids = Number(await inspect(name, '{{.HostConfig.PidsLimit}}'))
      t.ok(pids > 0 && pids <= 2048, `${service}: pids ${pids}`)
    }

    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    for (const [index, replica] of replicas.entries()) {
      const plant = { id: index + 1, name: `Fern of ${replica.service}`, tag: 'compose' }
      const created = await postPlant(replica.url, plant, { headers })
      t.equal(created.statusCode, 200, `${replica.service} creates a plant: ${created.body}`)
      const other = replicas[(index + 1) % replicas.length]!
      const conflict = await postPlant(other.url, { ...plant, name: 'Moss' }, { headers })
      t.equal(conflict.statusCode, 409, `${other.service}: 409, one database`)
    }

    await compose('down', '--volumes')
    t.same(await containers(), [], 'down: no containers')
    t.same(await volumesOf(), [], 'down -v: no volumes')
  },
)
