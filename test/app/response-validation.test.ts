/** Outside production every reply is checked against its schema: a handler answering outside it fails loudly. */
import t, { type Test } from 'tap'
import { createApp } from '../../service/app.ts'
import { loadContractReadings } from '../../service/contract.ts'
import { freshStore, testConfig } from '../helpers/app.ts'
import { postPlant } from '../helpers/post-plant.ts'

/** The app with a createPlant that answers a Plant whose name is a number. */
async function careless(t: Test, nodeEnv: 'test' | 'production') {
  const readings = loadContractReadings()
  const service = () => ({ createPlant: async () => ({ name: 5 }) })
  const parts = { contract: readings.document, documented: readings, service }
  const app = await createApp(testConfig({ ...(await freshStore(t)), nodeEnv }), false, parts)
  t.teardown(() => app.close())
  return app
}

t.test('outside production a reply that breaks its schema is a 500', async (t) => {
  const response = await postPlant(await careless(t, 'test'), { id: 1, name: 'Ficus' })
  t.strictSame([response.statusCode, response.json()], [500, { error: 500, message: 'Internal Server Error' }])
})

t.test('in production it is serialized by the schema, unchecked', async (t) => {
  const response = await postPlant(await careless(t, 'production'), { id: 1, name: 'Ficus' })
  t.strictSame([response.statusCode, response.json()], [200, { name: '5' }])
})
