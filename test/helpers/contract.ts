/** What openapi.yaml says, for tests to derive from rather than restate; checks of responses against it. */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import type { LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import { loadContract } from '../../service/contract.ts'

/** A response of `inject`, `postPlant` or `raw-http.ts`. */
export type AnyResponse = Pick<LightMyRequestResponse, 'statusCode' | 'body'> & { headers: Record<string, unknown> }

const contract = loadContract()
const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true })
ajv.addFormat('int32', true).addFormat('int64', true)
ajv.addSchema(contract, 'contract')

/** openapi.yaml's operations (method upper case, path template, operationId), in order. */
export const OPERATIONS = Object.entries(contract.paths).flatMap(([path, item = {}]) =>
  Object.entries(item).flatMap(([method, operation]) => {
    const operationId = (operation as { operationId?: unknown }).operationId
    return typeof operationId === 'string' ? [{ method: method.toUpperCase(), path, operationId }] : []
  }),
)

/** The contract's methods, sorted, each once (what CORS allows). */
export const CONTRACT_METHODS = [...new Set(OPERATIONS.map((operation) => operation.method))].sort()

/** The methods a path template allows, sorted, HEAD wherever GET is (RFC 9110 §9.3.2): a 405's `Allow`. */
export function allowedMethods(path: string): string[] {
  const methods = OPERATIONS.filter((operation) => operation.path === path).map((operation) => operation.method)
  return [...new Set([...methods, ...(methods.includes('GET') ? ['HEAD'] : [])])].sort()
}

/** A method without an operation at the path template `path` (405 there). */
export function otherMethod(path: string): string {
  return ['DELETE', 'PUT', 'PATCH', 'GET', 'POST'].find((method) => !allowedMethods(path).includes(method))!
}

/** A URL path of the template `path`: each `{parameter}` as `1`. */
export const examplePath = (path: string): string => path.replace(/\{[^}]+\}/g, '1')

/** A validator of the contract's schema at `pointer` (`#/components/schemas/NewPlant`). */
export function schemaAt(pointer: string): ValidateFunction {
  return ajv.getSchema(`contract${pointer}`)!
}

/** Problems of a response that must be `application/json` of the schema `validate`. */
function bodyProblems(response: AnyResponse, validate: ValidateFunction) {
  const contentType = String(response.headers['content-type'])
  const problems = contentType.startsWith('application/json')
    ? []
    : [`content type ${contentType} is not application/json`]
  try {
    if (!validate(JSON.parse(response.body))) problems.push(ajv.errorsText(validate.errors))
  } catch {
    problems.push(`the body is not JSON: ${JSON.stringify(response.body.slice(0, 200))}`)
  }
  return problems
}

/** A response to `POST /plants`'s undeclared status, media type or body; none when it conforms. */
export function contractViolations(response: AnyResponse): string[] {
  const responses = contract.paths['/plants']!.post!.responses as Record<string, { $ref?: string }>
  const status = String(response.statusCode) in responses ? String(response.statusCode) : 'default'
  const declared = responses[status]
  if (declared === undefined) return [`status ${response.statusCode} is not declared`]
  const pointer = declared.$ref ?? `#/paths/~1plants/post/responses/${status}`
  const { content } = (declared.$ref ? contract.components!.responses![pointer.split('/').pop()!] : declared) as {
    content?: Record<string, unknown>
  }
  if (content?.['application/json'] === undefined)
    return [`status ${response.statusCode} declares no application/json body`]
  return bodyProblems(response, schemaAt(`${pointer}/content/application~1json/schema`))
}

/** Asserts `status` and the `Error` body, `error` equal to it. */
export function assertErrorBody(t: Test, response: AnyResponse, status: number): void {
  t.equal(response.statusCode, status, `status ${status}`)
  const problems = bodyProblems(response, schemaAt('#/components/schemas/Error'))
  if (problems.length === 0 && (JSON.parse(response.body) as { error: unknown }).error !== status)
    problems.push(`error is not ${status}: ${response.body}`)
  t.same(problems, [], 'the Error body, error equal to the status')
}
