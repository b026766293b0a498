/**
 * The request path as app.ts documents it: the table of hooks at the top of
 * service/app.ts lists, in order, every hook Fastify runs for `POST /plants` with
 * the default settings, as `printRoutes({ includeHooks: true })` shows them.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import { loadConfig } from '../../service/config.js'
import { build, TOKEN } from '../helpers/app.js'

/** The hooks of the table in app.ts's module comment, by step, in order. */
function documentedHooks(): Record<string, string[]> {
  const source = readFileSync(new URL('../../service/app.ts', import.meta.url), 'utf8')
  const hooks: Record<string, string[]> = {}
  // Rows with a hook name; the header row is `| step | hook |`.
  for (const [, step, hook] of source.matchAll(/^ \* \| (?!step )(\w+) +\| (\w+) +\|/gm)) (hooks[step!] ??= []).push(hook!)
  return hooks
}

/** The hooks Fastify runs for `method path`, by step, from `printRoutes`. */
function registeredHooks(routes: string, route: string): Record<string, string[]> {
  const lines = routes.split('\n')
  const start = lines.findIndex((line) => line.endsWith(route))
  t.not(start, -1, `printRoutes lists ${route}`)
  const hooks: Record<string, string[]> = {}
  for (const line of lines.slice(start + 1)) {
    const hook = /• \((\w+)\) (\[.*\])$/.exec(line)
    if (hook === null) break
    hooks[hook[1]!] = (JSON.parse(hook[2]!) as string[]).map((name) => name.replace(/\(\)$/, ''))
  }
  return hooks
}

t.test("app.ts's table of hooks is the request path of POST /plants, in order", async (t) => {
  const defaults = loadConfig({ NODE_ENV: 'test', PLANT_STORE_TOKENS: TOKEN })
  const app = await build(t, {
    rateLimitMax: defaults.rateLimitMax,
    authFailureLimitMax: defaults.authFailureLimitMax,
    loadShedMaxEventLoopDelayMs: defaults.loadShedMaxEventLoopDelayMs,
  })
  const documented = documentedHooks()
  t.strictSame(Object.keys(documented), ['onRequest', 'preValidation', 'preHandler', 'onSend', 'onResponse'], 'the table has hooks at every step')
  t.strictSame(registeredHooks(app.printRoutes({ includeHooks: true, commonPrefix: false }), '/plants (POST)'), documented)
})
