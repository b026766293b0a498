/**
 * The benchmark's ablation target: the service exactly as `service/server.ts` runs
 * it, except that the repository's database write is skipped and every plant is
 * answered as created. Group commit, auth, parsing, validation, protections,
 * metrics, logging and serialization all still run. Comparing it with the service
 * on a real store shows what storing durably costs per request (docs/benchmarks.md).
 * Never a way to run the service: it stores nothing.
 *
 * @module
 */
import { PlantRepository } from '../service/store/plant-repository.ts'

PlantRepository.prototype.saveAll = function saveAllSkipped(plants) {
  return Promise.resolve(plants.map((plant) => ({ status: 'created' as const, stored: plant })))
}

await import('../service/server.ts')
