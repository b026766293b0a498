/**
 * The service class of fastify-openapi-glue: requests arrive authenticated, parsed and
 * validated; replies are serialized by the schema of their status.
 * @module
 */
import { HttpError, ServiceUnavailableError } from '../errors.js'
import type { operations } from '../generated/openapi.js'
import type { OperationRequest, ServiceHandlers, SuccessBody } from './handlers.js'
import type { Metrics } from '../plugins/metrics.js'
import type { GroupCommit } from '../store/group-commit.js'
import { type PlantRecord, type PlantRepository, StoreUnavailableError } from '../store/plant-repository.js'

/** What the service class is built from (`createApp`). */
export interface ServiceParts {
  readonly repository: PlantRepository
  /** Group commit in front of {@link repository}: where creates go. */
  readonly writer: GroupCommit
  readonly metrics: Metrics
}

/** The operations of openapi.yaml; the compiler checks it has a method for each ({@link ServiceHandlers}). */
export class PlantService implements ServiceHandlers<operations> {
  constructor(protected readonly parts: ServiceParts) {}

  /**
   * `createPlant` (`POST /plants`), as openapi.yaml decides (info.description,
   * "Retries are safe"; responses.Conflict).
   * @throws {HttpError} 409 on a conflicting id; 503 with `Retry-After` when the store is
   *   unavailable; the store's own error (500) for any other failure.
   */
  async createPlant(request: OperationRequest<operations['createPlant']>): Promise<SuccessBody<operations['createPlant']>> {
    const body = request.body
    const plant: PlantRecord = { id: body.id, name: body.name, tag: body.tag ?? null }
    const outcome = await this.parts.writer.save(plant).catch((error: unknown) => {
      if (error instanceof StoreUnavailableError) throw new ServiceUnavailableError('The store is unavailable; retry later')
      throw error
    })
    this.parts.metrics.creates.inc({ outcome: outcome.status })
    if (outcome.status === 'conflict') {
      throw new HttpError(409, `A different plant with id ${plant.id} already exists`)
    }
    const { name, tag } = outcome.stored
    return tag === null ? { name } : { name, tag }
  }
}
