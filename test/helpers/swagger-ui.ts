/**
 * A real browser on the documentation: Debian's Chromium, driven by playwright-core,
 * on Swagger UI (`/docs`): Authorize with a bearer token, then "Try it out" →
 * Execute on `POST /plants` (openapi.yaml: servers, security). Pages reach nothing
 * but the loopback host, and must break no content security policy.
 *
 * Chromium must be installed at {@link CHROMIUM} (`apt-get install chromium`);
 * without it {@link launchChromium} throws, so a test that uses it declares
 * `requires('chromium')` (`needs.ts`) and is skipped, naming it.
 *
 * @module
 */
import { existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, chromium, type Page } from 'playwright-core'
import type { Test } from 'tap'
import type { TestContext } from './app.js'
import { CHROMIUM } from './needs.js'
import { type Gateway, GATEWAY_PREFIX } from './nginx.js'
/** Milliseconds any one step (navigation, click, wait) may take. */
const STEP_TIMEOUT_MS = 15_000
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

/** Where a screenshot named `name` goes: `artifacts/` (git-ignored). */
export function screenshotPath(name: string): string {
  return fileURLToPath(new URL(`../../artifacts/${name}`, import.meta.url))
}

/**
 * Starts headless Chromium, closed at teardown.
 * @throws when Chromium is not installed or does not start within 30 s.
 */
export async function launchChromium(t: TestContext): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: install it (apt-get install chromium) to run the browser tests`)
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // playwright-core gives the browser a fresh temporary profile (user data dir) and removes it on close.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: STEP_TIMEOUT_MS * 2,
  })
  t.teardown(() => browser.close())
  return browser
}

/** What a page did that it must not: requests off the loopback host (refused), uncaught errors, CSP violations. */
export interface Misdeeds {
  outside: string[]
  pageErrors: string[]
  cspViolations: string[]
}

/**
 * A page in a browser context of its own (no shared storage), closed at teardown,
 * whose only reachable host is loopback. It accepts the gateway's self-signed certificate.
 */
export async function isolatedPage(t: Test, browser: Browser): Promise<{ page: Page; misdeeds: Misdeeds }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, ignoreHTTPSErrors: true })
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
export async function docsShown(page: Page): Promise<void> {
  await page.locator('.swagger-ui .info .title').filter({ hasText: 'OpenAPI Plant Store' }).waitFor()
}

/** Authorizes with `token` through the Authorize dialog (security scheme bearerAuth). */
export async function authorize(page: Page, token: string): Promise<void> {
  await page.locator('.scheme-container button.authorize').click()
  const dialog = page.locator('.modal-ux')
  await dialog.locator('.auth-container').filter({ hasText: 'bearerAuth' }).locator('input').fill(token)
  await dialog.locator('button.authorize').click()
  await dialog.locator('button.btn-done').click()
  await dialog.waitFor({ state: 'detached' })
}

/** Swagger UI's element of operation createPlant, listed under its tag `plants` (openapi.yaml). */
export const CREATE_PLANT = '#operations-plants-createPlant'

/**
 * The server selector as shown: the selected option's text (`url - description`), and
 * whether it fits the box, by the text's width in the box's font against the box's
 * width less its padding (where the arrow is drawn).
 */
export async function serverShown(page: Page): Promise<{ text: string; fits: boolean }> {
  return page.locator('.scheme-container .servers select').evaluate((select: HTMLSelectElement) => {
    const text = select.options[select.selectedIndex]!.text
    const style = getComputedStyle(select)
    const context = document.createElement('canvas').getContext('2d')!
    context.font = style.font
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)
    return { text, fits: context.measureText(text).width <= room }
  })
}

/** Runs POST /plants through "Try it out" with `body`; returns the live response's status and body text, and the URL it went to. */
export async function tryItOut(page: Page, body: object): Promise<{ status: string; body: string; requestUrl: string }> {
  const operation = page.locator(CREATE_PLANT)
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

/** The page left the loopback host never, threw nothing, and broke no content security policy. */
export function noMisdeeds(t: Test, misdeeds: Misdeeds): void {
  t.same(misdeeds.outside, [], 'no request left the loopback host')
  t.same(misdeeds.pageErrors, [], 'no uncaught error in the page')
  t.same(misdeeds.cspViolations, [], 'no content security policy violation')
}

/** A NewPlant with a tag, as typed into Try it out. */
export interface TriedPlant {
  id: number
  name: string
  tag: string
}

/**
 * In an authorized page, creates `plant` with Try it out → Execute: the request goes
 * to `requestUrl`, is answered 200 and the page shows the Plant; saves a screenshot
 * to `screenshot`.
 */
export async function createsPlant(t: Test, page: Page, plant: TriedPlant, requestUrl: string, screenshot: string): Promise<void> {
  const result = await tryItOut(page, plant)
  t.equal(result.requestUrl, requestUrl, 'the relative server URL resolves to the service')
  t.equal(result.status, '200')
  t.strictSame(JSON.parse(result.body), { name: plant.name, tag: plant.tag }, 'the page shows the Plant')
  mkdirSync(dirname(screenshot), { recursive: true })
  await page.locator(`${CREATE_PLANT} .live-responses-table`).scrollIntoViewIfNeeded()
  await page.screenshot({ path: screenshot })
}

/**
 * Swagger UI opened at `docsPath` through `gateway` (the service under
 * {@link GATEWAY_PREFIX}): authorized with `token`, Try it out creates `plant`
 * (200). Every request the page makes, assets, document and `POST /plants`, must
 * carry the prefix: the gateway's access log has each one.
 */
export async function createsPlantThroughGateway(t: Test, browser: Browser, gateway: Gateway, options: { docsPath: string; token: string; plant: TriedPlant; screenshot: string }): Promise<void> {
  const { page, misdeeds } = await isolatedPage(t, browser)
  const logged = gateway.accessLog().length
  await page.goto(`${gateway.origin}${options.docsPath}`)
  const paths = (): string[] => gateway.accessLog().slice(logged).map((entry) => entry.uri as string)
  const escaped = (): string[] => paths().filter((path) => !path.startsWith(`${GATEWAY_PREFIX}/`))
  // After the load event every asset the page links has been asked for.
  if (!t.same(escaped(), [], 'the page loads its assets through the prefix')) return
  await docsShown(page)
  await authorize(page, options.token)
  const created = page.waitForResponse((response) => response.url() === `${gateway.url}/plants`)
  await createsPlant(t, page, options.plant, `${gateway.url}/plants`, options.screenshot)
  // nginx logs a request once it has answered it: wait for the last one's line.
  const requestId = await (await created).headerValue('x-request-id')
  t.equal((await gateway.accessEntry(requestId!)).uri, `${GATEWAY_PREFIX}/plants`, 'POST /plants went through the gateway')
  t.ok(paths().some((path) => path.startsWith(`${GATEWAY_PREFIX}/docs/static/`)), 'the assets came through the gateway')
  t.same(escaped(), [], 'no request reached a path without the prefix')
  noMisdeeds(t, misdeeds)
}
