/**
 * A real browser on the documentation of a listening app: Chromium opens Swagger UI
 * at `/docs` and sees what a visitor sees (the operation under its tag, the server's
 * short description, no top bar loading other documents), authorizes with a bearer token and runs `POST /plants` with "Try it
 * out" → Execute (openapi.yaml: servers, security); without a token the same is 401.
 * The page must reach nothing but the service, and break no content security policy.
 *
 * The same through the example gateway in front of the service's containers, under
 * its path prefix, is in `test/deploy/gateway.test.ts`; both drive the page with
 * `test/helpers/swagger-ui.ts`. A screenshot of the authorized run is saved to
 * `artifacts/swagger-ui.png`. Needs Chromium; without it each test is skipped, naming it.
 *
 * @module
 */
import type { Browser } from 'playwright-core'
import t from 'tap'
import { createsPlant, isolatedPage, launchChromium, noMisdeeds, screenshotPath, tryItOut, docsShown, authorize, CREATE_PLANT, serverShown } from '../helpers/swagger-ui.js'
import { listen, TOKEN } from '../helpers/app.js'
import { requires } from '../helpers/needs.js'

// Starting Chromium and rendering Swagger UI can outlast tap's default 30 s on a busy runner.
t.setTimeout(120_000)
const chromium = requires('chromium')
/** The browser and the app, started by the first test that runs (none when Chromium is missing). */
let started: Promise<{ browser: Browser; url: string }> | undefined
const browserAndApp = () => (started ??= Promise.all([launchChromium(t), listen(t)]).then(([browser, { url }]) => ({ browser, url })))

t.test('as a visitor sees it: POST /plants under the tag plants, the server described in full, no top bar', chromium, async (t) => {
  const { browser, url } = await browserAndApp()
  const { page, misdeeds } = await isolatedPage(t, browser)
  await page.goto(`${url}/docs`)
  await docsShown(page)
  const section = page.locator('.opblock-tag-section').filter({ has: page.locator('#operations-tag-plants') })
  t.equal(await section.locator(CREATE_PLANT).count(), 1, 'createPlant is listed under plants')
  t.equal(await page.locator('#operations-tag-default').count(), 0, 'nothing is under default')
  t.strictSame(await serverShown(page), { text: '.. - This service', fits: true }, 'the server selector shows the short description whole')
  t.equal(await page.locator('.swagger-ui .topbar').count(), 0, 'no top bar')
  t.equal(await page.getByRole('button', { name: 'Explore' }).count(), 0, 'no Explore button')
  noMisdeeds(t, misdeeds)
})

t.test('authorized in Swagger UI, Try it out → Execute creates the plant: 200 with the Plant', chromium, async (t) => {
  const { browser, url } = await browserAndApp()
  const { page, misdeeds } = await isolatedPage(t, browser)
  await page.goto(`${url}/docs`)
  await docsShown(page)
  await authorize(page, TOKEN)
  await createsPlant(t, page, { id: 4242, name: 'Monstera deliciosa', tag: 'indoor' }, `${url}/plants`, screenshotPath('swagger-ui.png'))
  noMisdeeds(t, misdeeds)
})

t.test('not authorized, Try it out → Execute is answered 401 with the Error body', chromium, async (t) => {
  const { browser, url } = await browserAndApp()
  const { page, misdeeds } = await isolatedPage(t, browser)
  await page.goto(`${url}/docs`)
  await docsShown(page)
  const result = await tryItOut(page, { id: 4343, name: 'Ficus lyrata' })
  t.equal(result.status, '401')
  t.match(JSON.parse(result.body), { error: 401, message: String })
  noMisdeeds(t, misdeeds)
})
