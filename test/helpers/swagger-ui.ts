/**
 * Debian's Chromium (playwright-core) on Swagger UI: Authorize, Try it out → Execute; nothing off the loopback host, no
 * CSP violation.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Browser, chromium, type Page } from 'playwright-core'
import type { Test } from 'tap'
import type { TestContext } from './app.ts'
import { CHROMIUM } from './needs.ts'
import { type Gateway, GATEWAY_PREFIX, PLANTS } from './nginx.ts'

/** Swagger UI's element of operation createPlant, under its tag `plants`. */
export const CREATE_PLANT = '#operations-plants-createPlant'

/** Headless Chromium, closed at teardown. @throws when missing or not started within 30 s. */
export async function launchChromium(t: TestContext) {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM} (apt-get install chromium)`)
  const disabled = 'gpu quic background-networking component-update sync'.split(' ').map((what) => `--disable-${what}`)
  const args = ['--headless', '--no-sandbox', '--no-first-run', ...disabled]
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args, timeout: 30_000 })
  t.teardown(() => browser.close())
  return browser
}

/** Opens `url` in a context of its own (any certificate accepted) until it shows the document. */
export async function openDocs(t: Test, browser: Browser, url: string) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, ignoreHTTPSErrors: true })
  t.teardown(() => context.close())
  const misdeeds = { outside: [] as string[], pageErrors: [] as string[], cspViolations: [] as string[] }
  await context.route('**/*', async (route) => {
    const target = new URL(route.request().url())
    if (['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) return route.continue()
    misdeeds.outside.push(target.href)
    return route.abort('blockedbyclient')
  })
  const page = await context.newPage()
  page.setDefaultTimeout(15_000)
  page.on('pageerror', (error) => misdeeds.pageErrors.push(error.message))
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text()))
      misdeeds.cspViolations.push(message.text())
  })
  await page.goto(url)
  await page.locator('.swagger-ui .info .title').filter({ hasText: 'OpenAPI Plant Store' }).waitFor()
  return { page, misdeeds }
}

/** The page left the loopback host never, threw nothing, broke no CSP. */
export function noMisdeeds(t: Test, misdeeds: Awaited<ReturnType<typeof openDocs>>['misdeeds']) {
  t.same(misdeeds, { outside: [], pageErrors: [], cspViolations: [] }, 'nothing off the loopback host, no error')
}

/** Authorizes with `token` in the Authorize dialog (scheme bearerAuth). */
export async function authorize(page: Page, token: string) {
  await page.locator('.scheme-container button.authorize').click()
  const dialog = page.locator('.modal-ux')
  await dialog.locator('.auth-container').filter({ hasText: 'bearerAuth' }).locator('input').fill(token)
  await dialog.locator('button.authorize').click()
  await dialog.locator('button.btn-done').click()
  await dialog.waitFor({ state: 'detached' })
}

/** Runs POST /plants through "Try it out" with `body`. @returns the status, body and request URL shown. */
export async function tryItOut(page: Page, body: object) {
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

/** A NewPlant with a tag, as typed into Try it out. */
type TriedPlant = { id: number; name: string; tag: string }

/** Try it out creates `plant`: sent to `requestUrl`, 200, the Plant shown; a screenshot. */
export async function createsPlant(t: Test, page: Page, plant: TriedPlant, requestUrl: string, screenshot: string) {
  const result = await tryItOut(page, plant)
  t.equal(result.requestUrl, requestUrl, 'the relative server URL resolves to the service')
  t.equal(result.status, '200')
  t.strictSame(JSON.parse(result.body), { name: plant.name, tag: plant.tag }, 'the page shows the Plant')
  await page.locator(`${CREATE_PLANT} .live-responses-table`).scrollIntoViewIfNeeded()
  await page.screenshot({ path: fileURLToPath(new URL(`../../artifacts/${screenshot}`, import.meta.url)) })
}

/** Swagger UI at `docsPath` through `gateway` creates `plant`; every request has the prefix. */
export async function createsPlantThroughGateway(
  t: Test,
  browser: Browser,
  gateway: Gateway,
  { docsPath, token, plant, screenshot }: { docsPath: string; token: string; plant: TriedPlant; screenshot: string },
) {
  const logged = gateway.accessLog().length
  const { page, misdeeds } = await openDocs(t, browser, `${gateway.origin}${docsPath}`)
  await authorize(page, token)
  const created = page.waitForResponse((response) => response.url() === `${gateway.url}/plants`)
  await createsPlant(t, page, plant, `${gateway.url}/plants`, screenshot)
  const requestId = await (await created).headerValue('x-request-id')
  t.equal((await gateway.accessEntry(requestId!)).uri, PLANTS, 'POST /plants went through the gateway')
  const paths = gateway
    .accessLog()
    .slice(logged)
    .map((entry) => entry.uri)
  t.ok(
    paths.some((path) => path.startsWith(`${GATEWAY_PREFIX}/docs/static/`)),
    'the assets came through the gateway',
  )
  t.same(
    paths.filter((path) => !path.startsWith(`${GATEWAY_PREFIX}/`)),
    [],
    'every request had the prefix',
  )
  noMisdeeds(t, misdeeds)
}
