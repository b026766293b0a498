/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, e.g. from
 * `BENCH_PROFILE=<dir> npm run bench`): where the time of the request path goes.
 *
 * Usage: `node dist/bench/profile.js <file.cpuprofile> [top]`
 *
 * Prints, in milliseconds and percent of the sampled time:
 * - by stage of the request path: each sample goes to the stage of the innermost
 *   frame of its stack that belongs to a known stage (auth, parse, validate, store,
 *   serialize, log, protections, network I/O, framework glue), else to "other";
 * - self time by package (`node_modules/<package>`, the service's own files,
 *   Node's core modules, V8/native);
 * - the `top` functions by self time and by inclusive time (default 25).
 *
 * @module
 */
import { readFileSync } from 'node:fs'

/** The parts of the `.cpuprofile` format (Chrome DevTools protocol `Profiler.Profile`) read here. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[]
  samples: number[]
  /** Microseconds since the previous sample. */
  timeDeltas: number[]
}

type Frame = CpuProfile['nodes'][number]

/** Stages of the request path, tried in order; the first pattern that matches a frame names its stage. */
const STAGES: readonly (readonly [stage: string, test: (frame: Frame['callFrame']) => boolean])[] = [
  ['auth (bearer)', ({ url }) => /@fastify\/bearer-auth|\/service\/security\.js/.test(url)],
  ['log (pino)', ({ url }) => /node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream)\//.test(url)],
  [
    'store (kysely, better-sqlite3, pg)',
    ({ url }) => /node_modules\/(kysely|better-sqlite3|pg|pg-pool|pg-protocol|postgres)\/|\/service\/store\//.test(url),
  ],
  [
    'parse (body → JSON)',
    ({ url }) => /node_modules\/lossless-json\/|\/service\/json-body\.js|fastify\/lib\/contentTypeParser\.js/.test(url),
  ],
  [
    'validate (ajv)',
    ({ url, functionName }) =>
      /fastify\/lib\/validation\.js|node_modules\/ajv/.test(url) || (url === '' && /^validate\d*$/.test(functionName)),
  ],
  [
    'serialize (fast-json-stringify)',
    ({ url, functionName }) =>
      /fast-json-stringify|fastify\/lib\/(reply|error-serializer)\.js/.test(url) ||
      (url === '' && functionName === 'anonymous'),
  ],
  ['service handler', ({ url }) => /\/service\/(plant-service|errors)\.js/.test(url)],
  [
    'protections and metrics (helmet, rate limit, under-pressure, prom-client)',
    ({ url }) =>
      /node_modules\/(helmet|@fastify\/helmet|@fastify\/rate-limit|@fastify\/under-pressure|@platformatic\/prom-client|prom-client)\/|\/service\/(protection|operations)\.js/.test(
        url,
      ),
  ],
  [
    'network I/O (node core: HTTP and database sockets)',
    ({ url }) => /^node:(_http|http|net|stream|internal\/(http|streams|stream_base|net|js_stream))/.test(url),
  ],
  [
    'framework glue (fastify, hooks, routing)',
    ({ url }) =>
      /node_modules\/(fastify|find-my-way|fastify-openapi-glue|avvio|light-my-request|@fastify\/[^/]+|toad-cache|fast-querystring)\//.test(
        url,
      ),
  ],
  ['GC', ({ functionName }) => functionName === '(garbage collector)'],
  ['idle', ({ functionName }) => functionName === '(idle)'],
]

/** The package a frame's code belongs to, for self-time totals. */
function packageOf({ url, functionName }: Frame['callFrame']): string {
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (dependency) return dependency[1]!
  if (/\/dist\/service\//.test(url)) return `service: ${url.replace(/^.*\/dist\/service\//, '')}`
  if (url.startsWith('node:')) return `node: ${url.slice(5).replace(/^internal\//, 'internal/')}`
  if (url === '') return functionName.startsWith('(') ? functionName : '(native / V8 builtins / generated code)'
  return url
}

const label = ({ functionName, url, lineNumber }: Frame['callFrame']): string =>
  `${functionName || '(anonymous)'} ${url === '' ? '' : `${url.replace(/^.*\/(node_modules|dist)\//, '')}:${lineNumber + 1}`}`.trim()

function table(title: string, totals: Map<string, number>, total: number, top: number): string {
  const rows = [...totals].sort((a, b) => b[1] - a[1]).slice(0, top)
  return [
    `\n${title}`,
    ...rows.map(
      ([name, us]) =>
        `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)} %  ${name}`,
    ),
  ].join('\n')
}

/**
 * Reads and summarises one profile.
 * @returns the summary text.
 * @throws when the file cannot be read or is not a CPU profile.
 */
function summarise(path: string, top = 25): string {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

  const stageCache = new Map<number, string>()
  const stageOf = (id: number): string => {
    const cached = stageCache.get(id)
    if (cached !== undefined) return cached
    const frame = byId.get(id)!.callFrame
    const own = STAGES.find(([, test]) => test(frame))?.[0]
    const up = parent.get(id)
    const stage = own ?? (up === undefined ? 'other (program, timers, module loading)' : stageOf(up))
    stageCache.set(id, stage)
    return stage
  }

  const stages = new Map<string, number>()
  const packages = new Map<string, number>()
  const selfTime = new Map<string, number>()
  const inclusive = new Map<string, number>()
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us)
  let total = 0
  profile.samples.forEach((id, index) => {
    const us = profile.timeDeltas[index] ?? 0
    const frame = byId.get(id)!.callFrame
    total += us
    add(stages, stageOf(id), us)
    add(packages, packageOf(frame), us)
    add(selfTime, label(frame), us)
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = label(byId.get(at)!.callFrame)
      if (!seen.has(name)) add(inclusive, name, us)
      seen.add(name)
    }
  })
  for (const name of ['(root)', '(program)', '(idle)', '(garbage collector)']) inclusive.delete(name)
  return [
    `${path}: ${(total / 1e6).toFixed(2)} s sampled, ${profile.samples.length} samples`,
    table('By stage of the request path (innermost known frame):', stages, total, top),
    table('Self time by package:', packages, total, top),
    table('Top functions by self time:', selfTime, total, top),
    table('Top functions by inclusive time:', inclusive, total, top),
  ].join('\n')
}

const [path, top] = process.argv.slice(2)
if (path === undefined) {
  process.stderr.write('usage: node dist/bench/profile.js <file.cpuprofile> [top]\n')
  process.exit(2)
}
process.stdout.write(`${summarise(path, top === undefined ? 25 : Number(top))}\n`)
