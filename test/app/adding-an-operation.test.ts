/**
 * Adding an operation, as docs/adding-an-operation.md walks through it: the fixture
 * contract (openapi.yaml plus `getPlant`, GET /plants/{id}), a service class with a
 * `getPlant` method and a repository with `find`, built into the real application
 * and nothing else changed. Routing, validation, the exact int64 path parameter,
 * serialization, the 405 answers, CORS and the served document follow from the
 * contract.
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { createApp } from '../../service/app.js'
import { HttpError } from '../../service/errors.js'
import { PlantService, type ServiceParts } from '../../service/plant-service.js'
import { openStore } from '../../service/store/database.js'
import { type PlantRecord, PlantRepository } from '../../service/store/plant-repository.js'
import { fixtureContract } from '../fixtures/plant-contract.js'
import { freshStore, storeOptions, testConfig } from '../helpers/app.js'
import { postPlant } from '../helpers/post-plant.js'

/** The repository's new method. */
class ReadingRepository extends PlantRepository {
  async find(id: bigint): Promise<PlantRecord | undefined> {
    const row = await this.store.db.selectFrom('plant').select(['id', 'name', 'tag']).where('id', '=', id).executeTakeFirst()
    return row === undefined ? undefined : { id: BigInt(row.id), name: row.name, tag: row.tag }
  }
}

/**
 * The service class's new method. The app builds a PlantRepository, which has no `find`
 * yet: the fixture reads through a ReadingRepository on a connection of its own.
 */
class ReadingService extends PlantService {
  constructor(
    parts: ServiceParts,
    private readonly reader: ReadingRepository,
  ) {
    super(parts)
  }

  async getPlant(request: { params: { id: bigint } }): Promise<{ name: string; tag?: string }> {
    const plant = await this.reader.find(request.params.id)
    if (plant === undefined) throw new HttpError(404, `No plant with id ${request.params.id}`)
    return plant.tag === null ? { name: plant.name } : { name: plant.name, tag: plant.tag }
  }
}

/** The application with the fixture contract and the service above, CORS on for one origin. */
async function fixtureApp(t: Test): Promise<FastifyInstance> {
  const config = testConfig({ ...(await freshStore(t)), corsOrigins: ['https://ui.example'] })
  const contract = fixtureContract()
  const store = openStore(storeOptions(config))
  t.teardown(() => store.close())
  const app = await createApp(config, false, { contract, documented: contract, service: (parts) => new ReadingService(parts, new ReadingRepository(store)) })
  t.teardown(() => app.close())
  return app
}

t.test('getPlant answers the plant a POST stored, by its exact int64 id', async (t) => {
  const app = await fixtureApp(t)
  const created = await postPlant(app, { id: 9007199254740993n, name: 'Pilea', tag: 'indoor' }, { t })
  t.equal(created.statusCode, 200)
  const found = await app.inject({ url: '/plants/9007199254740993' })
  t.equal(found.statusCode, 200)
  t.strictSame(found.json(), { name: 'Pilea', tag: 'indoor' })
  const neighbour = await app.inject({ url: '/plants/9007199254740992' })
  t.equal(neighbour.statusCode, 404, 'the id 2^53, which 2^53 + 1 rounds to, is another plant')
  t.strictSame(neighbour.json(), { error: 404, message: 'No plant with id 9007199254740992' })
  const invalid = await app.inject({ url: '/plants/1.5' })
  t.strictSame([invalid.statusCode, invalid.json()], [400, { error: 400, message: 'params/id must be integer' }])
})

t.test('the other methods, CORS and the served document follow from the contract', async (t) => {
  const app = await fixtureApp(t)
  const deleted = await app.inject({ method: 'DELETE', url: '/plants/1' })
  t.equal(deleted.statusCode, 405)
  t.equal(deleted.headers.allow, 'GET, HEAD')
  t.equal((await app.inject({ method: 'GET', url: '/plants' })).headers.allow, 'POST', '/plants itself is unchanged')
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/plants/1',
    headers: { origin: 'https://ui.example', 'access-control-request-method': 'GET' },
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-methods'], 'GET, POST')
  const document = (await app.inject({ url: '/docs/json' })).json() as { paths: Record<string, { get?: { operationId: string } }> }
  t.equal(document.paths['/plants/{id}']?.get?.operationId, 'getPlant')
})
