/**
 * A real browser on the documentation: Debian's Chromium, driven by playwright-core,
 * opens Swagger UI at `/docs` of a listening app, authorizes with a bearer token and
 * runs `POST /plants` with "Try it out" → Execute (openapi.yaml: servers, security).
 * The page must reach nothing but the service, and break no content security policy.
 *
 * Behind the example gateway (`deploy/nginx/`: real nginx, TLS with the test's
 * self-signed certificate, the service under a path prefix) the same must hold, and
 * every request the page makes must carry the prefix.
 *
 * Chromium must be installed at {@link CHROMIUM} (`apt-get install chromium`), and
 * nginx (`apt-get install nginx-light`); without them this test fails, it does not
 * skip. Screenshots of the authorized run are saved to `artifacts/swagger-ui.png`
 * and, behind the gateway, `artifacts/swagger-ui-prefix.png`.
 *
 * @module
 */
import { existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { GATEWAY_PREFIX, startGateway } from './deploy/nginx.js'
import { listen, TOKEN } from './helper.js'

/** Debian's Chromium. */
const CHROMIUM = '/usr/bin/chromium'
/** Where the screenshots of the authorized runs go (git-ignored): direct, and behind the gateway. */
const SCREENSHOT = fileURLToPath(new URL('../artifacts/swagger-ui.png', import.meta.url))
const PREFIX_SCREENSHOT = fileURLToPath(new URL('../artifacts/swagger-ui-prefix.png', import.meta.url))
/** Milliseconds any one step (navigation, click, wait) may take. */
const STEP_TIMEOUT_MS = 15_000
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

if (!existsSync(CHROMIUM)) {
  throw new Error(`Chromium is missing at ${CHROMIUM}: install it (apt-get install chromium) to run the browser test`)
}

// Starting Chromium and rendering Swagger UI twice can outlast tap's default 30 s on a busy runner.
t.setTimeout(120_000)
const browser: Browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  // playwright-core gives the browser a fresh temporary profile (user data dir) and removes it on close.
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  timeout: STEP_TIMEOUT_MS * 2,
})
t.teardown(() => browser.close())
const { url } = await listen(t)

/** What a page did that it must not: requests off the loopback host (refused), uncaught errors, CSP violations. */
interface Misdeeds {
  outside: string[]
  pageErrors: string[]
  cspViolations: string[]
}

/**
 * A browser context of its own (no shared storage) whose only reachable host is
 * loopback. It accepts the gateway's self-signed certificate.
 */
async function isolatedPage(t: Test): Promise<{ page: Page; misdeeds: Misdeeds }> {
  const context: BrowserContext = await browser.newContext({ viewport: { width: 1280, height: 1000 }, ignoreHTTPSErrors: true })
  t.teardown(() => context.close())
  const misdeeds: Misdeeds = { outside: [], pageErrors: [], cspViolations: [] }
  await context.route('**/*', async (route) => {
    const target = new URL(route.request().url())
    if (LOOPBACK.has(target.hostname)) return route.continue()
    misdeeds.outside.push(target.href)
    return route.abort('blockedbyclient')
  })
  const page = await context.newPage()
  page.setDefaultTimeout(STEP_TIMEOUT_MS)
  page.on('pageerror', (error) => misdeeds.pageErrors.push(error.message))
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) misdeeds.cspViolations.push(message.text())
  })
  return { page, misdeeds }
}

/** Waits until Swagger UI has rendered the document. */
async function docsShown(page: Page): Promise<void> {
  await page.locator('.swagger-ui .info .title').filter({ hasText: 'OpenAPI Plant Store' }).waitFor()
}

/** Authorizes with `token` through the Authorize dialog (security scheme bearerAuth). */
async function authorize(page: Page, token: string): Promise<void> {
  await page.locator('.scheme-container button.authorize').click()
  const dialog = page.locator('.modal-ux')
  await dialog.locator('.auth-container').filter({ hasText: 'bearerAuth' }).locator('input').fill(token)
  await dialog.locator('button.authorize').click()
  await dialog.locator('button.btn-done').click()
  await dialog.waitFor({ state: 'detached' })
}

/** Opens Swagger UI at the service's `/docs`, and optionally authorizes with `token`. */
async function openDocs(page: Page, token?: string): Promise<void> {
  await page.goto(`${url}/docs`)
  await docsShown(page)
  if (token !== undefined) await authorize(page, token)
}

/** Runs POST /plants through "Try it out" with `body`; returns the live response's status and body text. */
async function tryItOut(page: Page, body: object): Promise<{ status: string; body: string; requestUrl: string }> {
  const operation = page.locator('#operations-default-createPlant')
  await operation.locator('.opblock-summary').click()
  await operation.locator('button.try-out__btn').click()
  await operation.locator('textarea.body-param__text').fill(JSON.stringify(body, null, 2))
  await operation.locator('button.execute').click()
  const live = operation.locator('.live-responses-table .response')
  await live.waitFor()
  return {
    status: (await live.locator('.response-col_status').innerText()).trim(),
    body: await live.locator('.response-col_description pre').first().innerText(),
    requestUrl: (await operation.locator('.request-url pre').innerText()).trim(),
  }
}

function noMisdeeds(t: Test, misdeeds: Misdeeds): void {
  t.same(misdeeds.outside, [], 'no request left the loopback host')
  t.same(misdeeds.pageErrors, [], 'no uncaught error in the page')
  t.same(misdeeds.cspViolations, [], 'no content security policy violation')
}

/**
 * In an authorized page, creates `plant` with Try it out → Execute: the request goes
 * to `requestUrl`, is answered 200 and the page shows the Plant; saves a screenshot.
 */
async function createsPlant(t: Test, page: Page, plant: { id: number; name: string; tag: string }, requestUrl: string, screenshot: string): Promise<void> {
  const result = await tryItOut(page, plant)
  t.equal(result.requestUrl, requestUrl, 'the relative server URL resolves to the service')
  t.equal(result.status, '200')
  t.strictSame(JSON.parse(result.body), { name: plant.name, tag: plant.tag }, 'the page shows the Plant')
  mkdirSync(dirname(screenshot), { recursive: true })
  await page.locator('#operations-default-createPlant .live-responses-table').scrollIntoViewIfNeeded()
  await page.screenshot({ path: screenshot })
}

/**
 * Swagger UI opened at `docsPath` through the example gateway in front of the app:
 * every request the page makes, assets, document and `POST /plants`, must carry the
 * prefix (the gateway's access log has each one).
 */
async function behindGateway(t: Test, docsPath: string, plant: { id: number; name: string; tag: string }): Promise<void> {
  const gateway = await startGateway(t, { upstreams: [new URL(url).host] })
  const { page, misdeeds } = await isolatedPage(t)
  await page.goto(`${gateway.origin}${docsPath}`)
  const paths = (): string[] => gateway.accessLog().map((entry) => entry.uri as string)
  const escaped = (): string[] => paths().filter((path) => !path.startsWith(`${GATEWAY_PREFIX}/`))
  // After the load event every asset the page links has been asked for.
  if (!t.same(escaped(), [], 'the page loads its assets through the prefix')) return
  await docsShown(page)
  await authorize(page, TOKEN)
  const created = page.waitForResponse((response) => response.url() === `${gateway.url}/plants`)
  await createsPlant(t, page, plant, `${gateway.url}/plants`, PREFIX_SCREENSHOT)
  // nginx logs a request once it has answered it: wait for the last one's line.
  const requestId = await (await created).headerValue('x-request-id')
  t.equal((await gateway.accessEntry(requestId!)).uri, `${GATEWAY_PREFIX}/plants`, 'POST /plants went through the gateway')
  t.ok(paths().some((path) => path.startsWith(`${GATEWAY_PREFIX}/docs/static/`)), 'the assets came through the gateway')
  t.same(escaped(), [], 'no request reached a path without the prefix')
  noMisdeeds(t, misdeeds)
}

t.test('authorized in Swagger UI, Try it out → Execute creates the plant: 200 with the Plant', async (t) => {
  const { page, misdeeds } = await isolatedPage(t)
  await openDocs(page, TOKEN)
  await createsPlant(t, page, { id: 4242, name: 'Monstera deliciosa', tag: 'indoor' }, `${url}/plants`, SCREENSHOT)
  noMisdeeds(t, misdeeds)
})

t.test('not authorized, Try it out → Execute is answered 401 with the Error body', async (t) => {
  const { page, misdeeds } = await isolatedPage(t)
  await openDocs(page)
  const result = await tryItOut(page, { id: 4343, name: 'Ficus lyrata' })
  t.equal(result.status, '401')
  t.match(JSON.parse(result.body), { error: 401, message: String })
  noMisdeeds(t, misdeeds)
})

t.test(`behind the gateway (TLS, the service under ${GATEWAY_PREFIX}), Swagger UI at ${GATEWAY_PREFIX}/docs/ creates the plant through the prefix`, async (t) => {
  await behindGateway(t, `${GATEWAY_PREFIX}/docs/`, { id: 4444, name: 'Calathea orbifolia', tag: 'shade' })
})

// @fastify/swagger-ui 6.1 links its assets from the service root (/docs/static/…) unless
// the URL ends in '/' (lib/index-html.js); the service redirects /docs to the relative docs/.
t.test(`behind the gateway, Swagger UI at ${GATEWAY_PREFIX}/docs (no trailing slash) creates the plant through the prefix`, async (t) => {
  await behindGateway(t, `${GATEWAY_PREFIX}/docs`, { id: 4545, name: 'Pilea peperomioides', tag: 'shelf' })
})
