/** The service class: requests arrive authenticated and validated; replies are serialized by schema. @module */
import { HttpError } from '../errors.ts'
import type { operations } from '../generated/openapi.ts'
import type { OperationRequest, ServiceHandlers, SuccessBody } from './handlers.ts'
import type { Metrics } from '../plugins/metrics.ts'
import type { GroupCommit, PlantRecord, PlantRepository } from '../store/plant-repository.ts'

/** What the service class is built with (`app.plants` and `app.metrics`). */
export interface ServiceParts {
  readonly repository: PlantRepository
  /** Where creates go: group commit in front of {@link repository}. */
  readonly writer: GroupCommit
  readonly metrics: Metrics
}

/** One method per operationId of openapi.yaml; glue routes each operation to its method. */
export class PlantService implements ServiceHandlers<operations> {
  protected readonly parts: ServiceParts

  constructor(parts: ServiceParts) {
    this.parts = parts
  }

  /** openapi.yaml, "Retries are safe". @throws {HttpError} 409 on a conflicting id (responses.Conflict). */
  async createPlant(
    request: OperationRequest<operations['createPlant']>,
  ): Promise<SuccessBody<operations['createPlant']>> {
    const body = request.body
    const plant: PlantRecord = { id: body.id, name: body.name, tag: body.tag ?? null }
    const outcome = await this.parts.writer.save(plant)
    this.parts.metrics.creates.inc({ outcome: outcome.status })
    if (outcome.status === 'conflict') {
      throw new HttpError(409, `A different plant with id ${plant.id} already exists`)
    }
    const { name, tag } = outcome.stored
    return tag === null ? { name } : { name, tag }
  }
}
