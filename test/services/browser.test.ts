/**
 * Chromium on Swagger UI at `/docs`: what a visitor sees; Execute 401 without a token, 200 authorized; nothing off the
 * loopback host, no CSP violation. Through the gateway: deploy/gateway.test.ts.
 */
import type { Page } from 'playwright-core'
import t from 'tap'
import { listen, TOKEN } from '../helpers/app.ts'
import { requires } from '../helpers/needs.ts'
import {
  authorize,
  CREATE_PLANT,
  createsPlant,
  launchChromium,
  noMisdeeds,
  openDocs,
  tryItOut,
} from '../helpers/swagger-ui.ts'

t.setTimeout(120_000)
const chromium = requires('chromium')
const started = chromium.skip ? undefined : Promise.all([launchChromium(t), listen(t)])

/** The server selector's selected text, and whether it fits the box. */
const serverShown = (page: Page) =>
  page.locator('.scheme-container .servers select').evaluate((select: HTMLSelectElement) => {
    const [text, style] = [select.options[select.selectedIndex]!.text, getComputedStyle(select)]
    const context = document.createElement('canvas').getContext('2d')!
    context.font = style.font
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)
    return { text, fits: context.measureText(text).width <= room }
  })

t.test(
  'as a visitor sees it: POST /plants under the tag plants, the server described in full, no top bar; Execute ' +
    'without a token is 401',
  chromium,
  async (t) => {
    const [browser, { url }] = await started!
    const { page, misdeeds } = await openDocs(t, browser, `${url}/docs`)
    const section = page.locator('.opblock-tag-section').filter({ has: page.locator('#operations-tag-plants') })
    t.equal(await section.locator(CREATE_PLANT).count(), 1, 'createPlant is listed under plants')
    t.equal(await page.locator('#operations-tag-default').count(), 0, 'nothing is under default')
    t.strictSame(await serverShown(page), { text: '.. - This service', fits: true }, 'the server is shown whole')
    t.equal(await page.locator('.swagger-ui .topbar').count(), 0, 'no top bar')
    t.equal(await page.getByRole('button', { name: 'Explore' }).count(), 0, 'no Explore button')
    const result = await tryItOut(page, { id: 4343, name: 'Ficus lyrata' })
    t.equal(result.status, '401')
    t.match(JSON.parse(result.body), { error: 401, message: String })
    noMisdeeds(t, misdeeds)
  },
)

t.test('authorized in Swagger UI, Try it out → Execute creates the plant: 200 with the Plant', chromium, async (t) => {
  const [browser, { url }] = await started!
  const { page, misdeeds } = await openDocs(t, browser, `${url}/docs`)
  await authorize(page, TOKEN)
  const plant = { id: 4242, name: 'Monstera deliciosa', tag: 'indoor' }
  await createsPlant(t, page, plant, `${url}/plants`, 'swagger-ui.png')
  noMisdeeds(t, misdeeds)
})
