/** openapi.yaml, read once at start-up, and the types generated from it (`npm run generate`). @module */
import { readFileSync } from 'node:fs'
import type { OpenAPIV3 } from 'openapi-types'
import { parseDocument } from 'yaml'
import type { operations } from './generated/openapi.ts'

/** The build copies openapi.yaml beside `dist/service/`. */
export const CONTRACT_URL = new URL('../openapi.yaml', import.meta.url)

/** Typed as OpenAPI 3.0 for glue and @fastify/swagger; the 3.1 document fits it in all the service reads. */
export type OpenApiDocument = OpenAPIV3.Document

/** openapi.yaml read two ways, and as text. */
export interface Contract {
  /** Integers as JS numbers, for glue, ajv and the service. */
  document: OpenApiDocument
  /** Integers as bigints, as written (an example's id is past 2^53), for the docs routes. */
  exact: unknown
  /** openapi.yaml as written, served at `/docs/yaml`. */
  text: string
}

/** Fresh objects each call. @throws when the file is missing or is not YAML. */
export function loadContractReadings(url: URL = CONTRACT_URL): Contract {
  const text = readFileSync(url, 'utf8')
  const parsed = parseDocument(text, { intAsBigInt: true })
  if (parsed.errors.length > 0) throw parsed.errors[0]
  // yaml's toJS is untyped: the document is what openapi.yaml says, which the checks layer lints.
  const document: OpenApiDocument = parsed.toJS({
    reviver: (_key, value) => (typeof value === 'bigint' ? Number(value) : value),
  })
  return { document, exact: parsed.toJS(), text }
}

/** @throws as {@link loadContractReadings} does. */
export function loadContract(url: URL = CONTRACT_URL): OpenApiDocument {
  return loadContractReadings(url).document
}

/** Upper case, sorted, unique: what CORS allows. */
export function operationMethods(contract: OpenApiDocument): string[] {
  const methods = Object.values(contract.paths).flatMap((item = {}) =>
    Object.entries(item).flatMap(([method, operation]) =>
      typeof operation === 'object' && 'operationId' in operation ? [method.toUpperCase()] : [],
    ),
  )
  return [...new Set(methods)].sort()
}

/** The body of `createPlant` (openapi.yaml, `NewPlant`), as generated. */
export type NewPlant = operations['createPlant']['requestBody']['content']['application/json']
/** The 200 body of `createPlant` (openapi.yaml, `Plant`), as generated. */
export type Plant = operations['createPlant']['responses'][200]['content']['application/json']
