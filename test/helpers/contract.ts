/**
 * Checks of responses against openapi.yaml: a response of `POST /plants` has a
 * declared status, its media type and a body of the schema declared for that status;
 * an error of any route (404, 405, the gateway's own) has the `Error` body with
 * `error` equal to the status (openapi.yaml, info.description "Errors").
 *
 * @module
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import type { LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import { loadContract } from '../../service/contract.js'

/** A response as `inject` gives it, as `postPlant` gives it (`post-plant.ts`), or as read from a socket (`raw-http.ts`). */
export type AnyResponse = Pick<LightMyRequestResponse, 'statusCode' | 'body'> & { headers: Record<string, unknown> }

const contract = loadContract()
const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true })
ajv.addFormat('int32', true).addFormat('int64', true)
ajv.addSchema(contract, 'contract')

const validators = new Map<string, ValidateFunction>()

/**
 * A validator of the contract's schema at `pointer`, e.g.
 * `#/components/schemas/NewPlant`; compiled once.
 */
export function schemaAt(pointer: string): ValidateFunction {
  let validate = validators.get(pointer)
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `contract${pointer}` })
    validators.set(pointer, validate)
  }
  return validate
}

/** Resolves a local JSON pointer (`#/a/b`) in the contract. */
function resolve(pointer: string): Record<string, unknown> {
  return pointer
    .slice(2)
    .split('/')
    .reduce<unknown>((node, part) => (node as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')], contract) as Record<string, unknown>
}

/** The body as JSON, or the problem that it is not. */
function parsed(response: AnyResponse): { body: unknown } | { problem: string } {
  try {
    return { body: JSON.parse(response.body) as unknown }
  } catch {
    return { problem: `the body is not JSON: ${JSON.stringify(response.body.slice(0, 200))}` }
  }
}

/** Problems of the content type and body of a response that must be `application/json` of the schema `validate`. */
function bodyProblems(response: AnyResponse, validate: ValidateFunction): string[] {
  const problems: string[] = []
  const contentType = String(response.headers['content-type'])
  if (!contentType.startsWith('application/json')) problems.push(`content type ${contentType} is not application/json`)
  const json = parsed(response)
  if ('problem' in json) problems.push(json.problem)
  else if (!validate(json.body)) problems.push(ajv.errorsText(validate.errors))
  return problems
}

/**
 * Checks a response of `POST /plants` against the contract: its status is declared,
 * its content type is the declared one, and its body matches the declared schema.
 *
 * @returns a list of problems; empty when the response conforms.
 */
export function contractViolations(response: AnyResponse): string[] {
  const responses = (contract.paths['/plants']!.post as { responses: Record<string, { $ref?: string }> }).responses
  const declared = responses[String(response.statusCode)]
  if (declared === undefined) return [`status ${response.statusCode} is not declared`]
  const pointer = declared.$ref ?? `#/paths/~1plants/post/responses/${response.statusCode}`
  if ((resolve(pointer).content as Record<string, unknown> | undefined)?.['application/json'] === undefined) {
    return [`status ${response.statusCode} declares no application/json body`]
  }
  return bodyProblems(response, schemaAt(`${pointer}/content/application~1json/schema`))
}

/**
 * Asserts that `response` is `status` with the contract's `Error` body (JSON), its
 * `error` equal to the status: for any route and for what a gateway answers itself.
 */
export function assertErrorBody(t: Test, response: AnyResponse, status: number): void {
  t.equal(response.statusCode, status, `status ${status}`)
  const problems = bodyProblems(response, schemaAt('#/components/schemas/Error'))
  const json = parsed(response)
  if ('body' in json && (json.body as { error?: unknown } | null)?.error !== status) problems.push(`error is not ${status}: ${response.body}`)
  t.same(problems, [], 'the Error body, error equal to the status')
}
