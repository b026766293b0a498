/**
 * Responses judged by Prism's validating proxy (`sl-violations`); `--errors` Prism answers 401s itself, so those are
 * judged without it. Prism re-serializes JSON: malformed JSON and ids past 2^53 are tested elsewhere.
 */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { OpenAPIV3 } from 'openapi-types'
import t, { type Test } from 'tap'
import { stringify } from 'yaml'
import { CONTRACT_URL, loadContract } from '../../service/contract.ts'
import { listen, TOKEN, type TestContext } from '../helpers/app.ts'
import { freePort } from '../helpers/machine.ts'
import { waitUntil } from '../helpers/podman.ts'
import { type PlantBody, postPlant } from '../helpers/post-plant.ts'

const require = createRequire(import.meta.url)
const PRISM_PACKAGE = require.resolve('@stoplight/prism-cli/package.json')
const PRISM_BIN = join(dirname(PRISM_PACKAGE), (require(PRISM_PACKAGE) as { bin: { prism: string } }).bin.prism)

/** Starts `prism proxy <contract> <upstream>`, killed at teardown. @returns its URL once it answers. */
async function startPrism(t: TestContext, contract: string, upstream: string, flags: string[]) {
  const args = [PRISM_BIN, 'proxy', contract, upstream, '--host', '127.0.0.1', '--port', '0', '--multiprocess=false']
  const child = spawn(process.execPath, [...args, ...flags], { env: { ...process.env, FORCE_COLOR: '0' } })
  t.teardown(() => void child.kill('SIGKILL'))
  let output = ''
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()))
  let url: string | undefined
  // A guard, not a speed limit: a start takes 30 s on a busy machine.
  await waitUntil(`prism ${flags.join(' ')} to answer`, 180_000, async () => {
    if (child.exitCode !== null) throw new Error(`prism ${flags.join(' ')} exited: ${output}`)
    url = /Prism is listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
    return (
      url !== undefined &&
      (await fetch(`${url}/plants`, { signal: AbortSignal.timeout(1000) }).catch(() => undefined)) !== undefined
    )
  })
  return url!
}

type Sent = { headers: Record<string, string>; body?: PlantBody }
type Violation = { location: string[]; severity: string; message: string }

/** Sends through the Prism at `base`: the answer, `sl-violations`, Prism's own problem type. */
async function send(base: string, { body, headers }: Sent) {
  const response = await postPlant(base, body, { headers, timeoutMs: 60_000 })
  const [violations, type] = [response.headers['sl-violations'], response.headers['content-type']]
  return {
    status: response.statusCode,
    body: response.body,
    violations: (violations === undefined ? [] : JSON.parse(String(violations))) as Violation[],
    prismProblem: type?.startsWith('application/problem+json') ? String(response.json().type) : undefined,
  }
}
type Judgement = Awaited<ReturnType<typeof send>>

const bearer = { authorization: `Bearer ${TOKEN}` }
const json = (body: object, headers: Record<string, string> = bearer): Sent => ({
  headers: { ...headers, 'content-type': 'application/json' },
  body,
})

/** Exchanges on ids from `id` up, named status first: is the request valid, does `--errors` Prism answer? */
function cases(id: number): Array<[string, boolean, Sent, boolean?]> {
  const [monstera, x, headers] = [{ id, name: 'Monstera deliciosa', tag: 'indoor' }, { id: id + 2, name: 'x' }, bearer]
  return [
    ['200 create with a tag', true, json(monstera)],
    ['200 idempotent replay', true, json(monstera)],
    ['200 create without a tag', true, json({ id: id + 1, name: 'Ficus lyrata' })],
    ['409 same id, other content', true, json({ id, name: 'Ficus lyrata' })],
    ['400 id of the wrong type', false, json({ ...x, id: String(id + 2) })],
    ['400 name missing', false, json({ id: id + 2 })],
    ['400 name null', false, json({ ...x, name: null })],
    ['400 NUL in name', false, json({ ...x, name: 'a\u0000b' })],
    // JSON.parse and JSON.stringify keep 1e+30 as it is, so the service gets the same text.
    ['400 id outside int64', false, { headers: json({}).headers, body: '{"id":1e+30,"name":"x"}' }],
    ['401 token not valid', true, json(x, { authorization: 'Bearer not-a-valid-token-0123456789' })],
    ['401 no token', false, json(x, {}), true],
    ['401 other scheme', false, json(x, { authorization: `Basic ${TOKEN}` }), true],
    ['413 body over the limit', true, json({ ...x, name: 'x'.repeat(70_000) })],
    ['415 text/plain', false, { headers: { ...headers, 'content-type': 'text/plain' }, body: '{"id":1,"name":"x"}' }],
    ['415 no body, no content type', false, { headers }],
  ]
}

// Four Prisms starting on a busy 2-CPU runner can outlast tap's default 30 s.
t.setTimeout(120_000)
const contract = fileURLToPath(CONTRACT_URL)
const { url: service } = await listen(t)
// No store, one request per token: the first valid request gets 503, the next 429.
const degraded = await listen(t, {
  databaseUrl: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
  migrateOnStart: false,
  databaseConnectTimeoutMs: 1000,
  rateLimitMax: 1,
})
// The canary: a contract whose Plant requires a property the service never sends, and without 409.
const canaryDir = t.testdir()
const mutated = loadContract()
;(mutated.components!.schemas!.Plant as OpenAPIV3.SchemaObject).required!.push('colour')
delete mutated.paths['/plants']!.post!.responses['409']
writeFileSync(join(canaryDir, 'openapi.yaml'), stringify(mutated))

const errors = ['--errors', '--validate-request=false']
const [strict, lenient, strictDegraded, canary] = await Promise.all([
  startPrism(t, contract, service, errors),
  startPrism(t, contract, service, []),
  startPrism(t, contract, degraded.url, errors),
  startPrism(t, join(canaryDir, 'openapi.yaml'), service, errors),
])

/** Prism found no fault in the response, and it is the service's. */
function conforms(t: Test, judged: Judgement, status: number) {
  t.same(
    judged.violations.filter((v) => v.location[0] === 'response'),
    [],
    'no response violation',
  )
  t.equal(judged.prismProblem, undefined, 'not a problem made by Prism')
  t.equal(judged.status, status, `the service answered ${status}`)
  t.equal(JSON.parse(judged.body).error, status === 200 ? undefined : status, 'the body is the service’s')
}

t.test('through prism --errors: every response conforms', async (t) => {
  for (const [name, , init, byPrism] of cases(1000)) {
    if (!byPrism) await t.test(name, async (t) => conforms(t, await send(strict, init), Number(name.slice(0, 3))))
  }
})

t.test('through prism without --errors: every response conforms, requests judged as expected', async (t) => {
  for (const [name, valid, init] of cases(2000)) {
    await t.test(name, async (t) => {
      const judged = await send(lenient, init)
      conforms(t, judged, Number(name.slice(0, 3)))
      t.equal(
        !judged.violations.some((v) => v.location[0] === 'request'),
        valid,
        `Prism finds it ${valid ? '' : 'in'}valid`,
      )
    })
  }
})

t.test('through prism --errors: 503 store unavailable, then 429 rate limited', async (t) => {
  for (const status of [503, 429]) conforms(t, await send(strictDegraded, json({ id: 1, name: 'Monstera' })), status)
})

t.test('canary: prism flags responses that break its contract (the check can fail)', async (t) => {
  const created = await send(canary, json({ id: 3000, name: 'Monstera deliciosa' }))
  t.equal(created.status, 500, 'a 200 without the required property becomes a 500')
  t.equal(created.prismProblem, 'https://stoplight.io/prism/errors#VIOLATIONS')
  t.match(created.violations, [{ location: ['response', 'body'], severity: 'Error', message: /colour/ }])
  const conflict = await send(canary, json({ id: 3000, name: 'Ficus lyrata' }))
  t.equal(conflict.status, 409, 'an undeclared non-2xx status passes through')
  t.match(conflict.violations, [
    { location: ['response'], severity: 'Warning', message: /Unable to match the returned status code/ },
  ])
})
