/**
 * The service class of fastify-openapi-glue: one method per `operationId` of
 * openapi.yaml. Requests arrive authenticated, parsed and validated against the
 * contract; replies are serialized by the schema of their status.
 *
 * @module
 */
import { HttpError, ServiceUnavailableError } from './errors.js'
import type { operations } from './generated/openapi.js'
import type { OperationRequest, ServiceHandlers, SuccessBody } from './handlers.js'
import { exactInteger } from './json-body.js'
import { type PlantRecord, type SaveOutcome, StoreUnavailableError } from './store/plant-repository.js'

/** Something that durably saves plants: the repository, or a group commit in front of it. */
interface PlantWriter {
  /**
   * Saves one plant; resolves once it is committed durably.
   * @throws when the store fails; nothing of the plant is then stored.
   */
  save(plant: PlantRecord): Promise<SaveOutcome>
}

/**
 * Implements the operations of openapi.yaml; the compiler checks it has a method for
 * each, typed by the document (see {@link ServiceHandlers}).
 */
export class PlantService implements ServiceHandlers<operations> {
  /**
   * @param writer - where plants are stored.
   * @param onOutcome - told of each save's outcome (metrics).
   */
  constructor(
    private readonly writer: PlantWriter,
    private readonly onOutcome: (status: SaveOutcome['status']) => void,
  ) {}

  /**
   * `createPlant` (`POST /plants`): stores the plant and answers it, as openapi.yaml
   * decides (info.description, "Identity and retries"; responses.Conflict).
   *
   * @param request - body already validated as NewPlant; `id` is read exactly
   *   (beyond 2^53) through {@link exactInteger}.
   * @returns the stored Plant (`name`, and `tag` when it has one).
   * @throws {HttpError} 409 on a conflicting id; 503 with `Retry-After` when the
   *   store is unavailable; the store's own error (500) for any other failure.
   */
  async createPlant(request: OperationRequest<operations['createPlant']>): Promise<SuccessBody<operations['createPlant']>> {
    const body = request.body
    const plant: PlantRecord = { id: exactInteger(body, 'id') ?? BigInt(body.id), name: body.name, tag: body.tag ?? null }
    const outcome = await this.writer.save(plant).catch((error: unknown) => {
      if (error instanceof StoreUnavailableError) throw new ServiceUnavailableError('The store is unavailable; retry later')
      throw error
    })
    this.onOutcome(outcome.status)
    if (outcome.status === 'conflict') {
      throw new HttpError(409, `A different plant with id ${plant.id} already exists`)
    }
    const { name, tag } = outcome.stored
    return tag === null ? { name } : { name, tag }
  }
}
