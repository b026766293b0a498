/**
 * Number literals built to stall the parser: answered as fast as an ordinary 400 of their size, a create beside them
 * not held up.
 */
import { performance } from 'node:perf_hooks'
import t from 'tap'
import { MAX_NUMBER_LENGTH } from '../../service/plugins/exact-json/index.ts'
import { build } from '../helpers/app.ts'
import { assertErrorBody } from '../helpers/contract.ts'
import { postPlant } from '../helpers/post-plant.ts'

/** Characters of each adversarial literal. */
const SIZE = 64 * 1024
/** Rounds of interleaved measurements; medians are compared. */
const ROUNDS = 3
/** Times the baseline's median an adversarial request may take (a quadratic parser took over 1000×). */
const SLACK = 10

const idBody = (value: string) => `{"id":${value},"name":"Ficus"}`

/** Bodies whose numbers cost the square of their length to read, or could; each is a 400. */
const ADVERSARIAL: Record<string, string> = {
  'a long fraction': idBody(`1.${'0'.repeat(SIZE)}1`),
  'trailing zeros cancelled by an exponent': idBody(`1${'0'.repeat(SIZE)}e-${SIZE}`),
  'a long negative integer': idBody(`-${'9'.repeat(SIZE)}`),
  'a long exponent': idBody(`1e${'9'.repeat(SIZE)}`),
  // Each is within the bound and read; together they fill 64 KiB. `name` makes it a 400.
  'many literals just under the bound': `{"id":1,"name":0,"extra":[${Array.from({ length: SIZE / MAX_NUMBER_LENGTH }, () => `1.${'0'.repeat(MAX_NUMBER_LENGTH - 3)}1`).join(',')}]}`,
}
/** An ordinary 400 of the same size; its fraction sends it through the exact parser too. */
const ORDINARY = `{"id":"${'x'.repeat(SIZE)}","name":"Ficus","weight":0.5}`

let nextId = 1

/** Milliseconds until `request` is answered. */
async function timed(request: () => Promise<unknown>) {
  const start = performance.now()
  await request()
  return performance.now() - start
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

t.test(
  'an adversarial number literal is 400 in the time of an ordinary 400 of its size; a create beside it is not delayed',
  async (t) => {
    const app = await build(t, { bodyLimit: 4 * SIZE })

    for (const payload of Object.values(ADVERSARIAL)) assertErrorBody(t, await postPlant(app, payload, { t }), 400)
    t.match((await postPlant(app, ADVERSARIAL['a long fraction']!)).json(), {
      message: `A number in the request is longer than ${MAX_NUMBER_LENGTH} characters`,
    })
    t.equal((await postPlant(app, ORDINARY)).statusCode, 400, 'the baseline is a 400 too')

    const alone: Record<string, number[]> = { ordinary: [] }
    const beside: Record<string, number[]> = { ordinary: [] }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, payload] of [['ordinary', ORDINARY], ...Object.entries(ADVERSARIAL)]) {
        ;(alone[name!] ??= []).push(await timed(() => postPlant(app, payload!)))
        const [, createMs] = await Promise.all([
          postPlant(app, payload!),
          timed(() => postPlant(app, { id: nextId++, name: 'Ficus' })),
        ])
        ;(beside[name!] ??= []).push(createMs)
      }
    }
    for (const name of Object.keys(ADVERSARIAL))
      for (const [what, times] of Object.entries({ '': alone, 'a create beside ': beside })) {
        const [took, baseline] = [median(times[name]!), median(times.ordinary!)]
        t.ok(took <= SLACK * baseline, `${what}${name}: ${took.toFixed(1)} ms, ordinary ${baseline.toFixed(1)} ms`)
      }
  },
)
