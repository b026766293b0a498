/**
 * The contract: openapi.yaml, read once at start-up, and the TypeScript types
 * generated from it (`npm run generate`, checked by `npm run check:types`).
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import type { OpenAPIV3 } from 'openapi-types'
import { parseDocument } from 'yaml'
import type { operations } from './generated/openapi.js'

/**
 * Location of openapi.yaml: the repository root, beside `service/`; the build copies
 * it to `dist/`, beside the compiled `dist/service/`.
 */
export const CONTRACT_URL = new URL('../openapi.yaml', import.meta.url)

/**
 * The contract as parsed from YAML, typed as openapi-types' OpenAPI 3.0 document: the
 * type glue and @fastify/swagger take. The 3.1 document fits it in all the service
 * reads (paths, operations, components).
 */
export type OpenApiDocument = OpenAPIV3.Document

/** The contract in its two readings, from one parse of the file. */
export interface Contract {
  /** Integers as JS numbers: what glue, ajv and the service read. */
  document: OpenApiDocument
  /**
   * Every integer a bigint, digit for digit as written (an example's int64 id is past
   * 2^53): what the documentation routes serve.
   */
  exact: unknown
}

/**
 * Reads and parses the contract once, in both readings.
 *
 * @param url - the YAML file; defaults to {@link CONTRACT_URL}.
 * @returns fresh objects each call.
 * @throws when the file is missing or is not YAML.
 */
export function loadContractReadings(url: URL = CONTRACT_URL): Contract {
  const parsed = parseDocument(readFileSync(url, 'utf8'), { intAsBigInt: true })
  if (parsed.errors.length > 0) throw parsed.errors[0]
  return {
    document: parsed.toJS({ reviver: (_key, value) => (typeof value === 'bigint' ? Number(value) : value) }) as OpenApiDocument,
    exact: parsed.toJS(),
  }
}

/**
 * Reads and parses the contract, integers as JS numbers ({@link Contract}.document).
 *
 * @param url - the YAML file; defaults to {@link CONTRACT_URL}.
 * @returns a fresh object each call.
 * @throws when the file is missing or is not YAML.
 */
export function loadContract(url: URL = CONTRACT_URL): OpenApiDocument {
  return loadContractReadings(url).document
}

/**
 * The methods of the contract's operations, upper case and sorted, each once
 * (`['POST']` for openapi.yaml): what CORS allows.
 */
export function operationMethods(contract: OpenApiDocument): string[] {
  const methods = Object.values(contract.paths).flatMap((item = {}) =>
    Object.entries(item).flatMap(([method, operation]) => ((operation as { operationId?: string }).operationId === undefined ? [] : [method.toUpperCase()])),
  )
  return [...new Set(methods)].sort()
}

/** Request body of operation `createPlant`: NewPlant. */
export type NewPlant = operations['createPlant']['requestBody']['content']['application/json']
/** Response body of operation `createPlant` on 200: Plant. */
export type Plant = operations['createPlant']['responses'][200]['content']['application/json']
