/**
 * docs/development.md's list of the files a `POST /plants` runs through is what V8's precise coverage measures; the
 * route's own hooks are at most 5.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import type { Socket } from 'node:net'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createApp } from '../../service/app.ts'
import { loadConfig } from '../../service/config.ts'
import { JSON_HEADERS, logSink, TOKEN } from '../helpers/app.ts'
import { postPlant } from '../helpers/post-plant.ts'

const root = fileURLToPath(new URL('../../', import.meta.url))
const LIST_HEADING = 'The files a `POST /plants` runs through, in order'
/** A request's one log line, once answered. */
const LOGGED_END = new Set(['request completed', 'request errored'])

function documentedPath() {
  const text = readFileSync(join(root, 'docs/development.md'), 'utf8')
  const lines = text.slice(text.indexOf(LIST_HEADING)).split('\n')
  const first = lines.findIndex((line) => line.startsWith('1. '))
  const end = lines.findIndex((line, index) => index > first && !/^\d+\. /.test(line))
  return lines.slice(first, end === -1 ? undefined : end).map((line) => /`([^`]+)`/.exec(line)?.[1] ?? line)
}

/** The scripts of service/ with a function called since the last take. */
async function takeCoverage(session: Session) {
  const { result } = await session.post('Profiler.takePreciseCoverage')
  return result
    .filter(({ url }) => url.startsWith('file:') && relative(root, fileURLToPath(url)).startsWith('service/'))
    .filter(({ functions }) => functions.some(({ ranges }) => (ranges[0]?.count ?? 0) > 0))
    .map(({ url }) => readerUnit(relative(root, fileURLToPath(url))))
}

/** A file, or the folder holding it that has a README.md. */
function readerUnit(file: string) {
  for (let folder = dirname(file); folder !== 'service' && folder !== '.'; folder = dirname(folder))
    if (existsSync(join(root, folder, 'README.md'))) return `${folder}/`
  return file
}

const unique = (files: string[]) => [...new Set(files)].sort()

/** The hooks `printRoutes` shows on `POST /plants` whose function service/ declares by name: the project's own. */
function ownHooks(routes: string) {
  const lines = routes.slice(routes.indexOf('/plants (POST)')).split('\n').slice(1)
  const end = lines.findIndex((line) => !line.includes('• ('))
  const hooks = lines.slice(0, end).flatMap((line) => [...line.matchAll(/"(\w+)\(\)"/g)].map((match) => match[1] ?? ''))
  const sources = readdirSync(join(root, 'service'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => readFileSync(join(root, 'service', file), 'utf8'))
    .join('\n')
  return { hooks, own: hooks.filter((name) => sources.includes(`function ${name}(`)) }
}

t.test('the files a POST /plants runs through are the ones docs/development.md lists', async (t) => {
  const documented = documentedPath()
  t.ok(documented.length > 0 && documented.length <= 12, `at most 12 files to read (${documented.length})`)
  t.equal(new Set(documented).size, documented.length, 'each listed once')

  const session = new Session()
  session.connect()
  // As tap's coverage takes them.
  const coverage = { callCount: true, detailed: true }
  await session.post('Profiler.enable')
  await session.post('Profiler.startPreciseCoverage', coverage)

  const { logger, lines } = logSink()
  const config = loadConfig({ NODE_ENV: 'production', PLANT_STORE_TOKENS: TOKEN, DATA_DIR: t.testdir() })
  const app = await createApp(config, logger)
  t.teardown(() => app.close())
  const { hooks, own } = ownHooks(app.printRoutes({ includeHooks: true, commonPrefix: false }))
  t.ok(own.length > 0 && own.length <= 5, `at most 5 hooks of the project's own on the route: ${own.join(', ')}`)
  t.ok(hooks.length > own.length, "and the libraries' beside them")
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const closed: Array<Promise<void>> = []
  app.server.on('connection', (socket: Socket) => closed.push(new Promise((resolve) => socket.once('close', resolve))))

  /** One create over a new connection, until logged and closed. */
  const create = async (id: number) => {
    const headers = { ...JSON_HEADERS, connection: 'close', 'x-request-id': `path-${id}` }
    t.equal((await postPlant(url, { id, name: 'Ficus' }, { headers })).statusCode, 200, `create ${id}: 200`)
    await Promise.all(closed)
    while (!lines.some((line) => line.requestId === `path-${id}` && LOGGED_END.has(String(line.msg))))
      await new Promise((resolve) => setImmediate(resolve))
  }
  const take = async () => unique(await takeCoverage(session))

  await create(1)
  await take()
  await create(2)
  const measured = await take()

  t.same(measured, unique(documented), 'it runs the files listed')
})
