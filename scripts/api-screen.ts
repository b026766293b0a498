/**
 * `node scripts/api-screen.ts [--check] [file]` (part of `npm run generate`; `npm run check:readme`): writes
 * README.md's "The API in a screen" (or `file`'s) from openapi.yaml, between its markers: each operation with its
 * credentials, parameters, request and answers, then one line per error status with the first sentence of its
 * description. With `--check` it writes nothing and exits 1 when the screen is not the contract's. Not part of the
 * build.
 *
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { OpenAPIV3_1 as OpenAPI } from 'openapi-types'
import { parse } from 'yaml'

/** The line before the generated screen. */
export const SCREEN_START =
  '<!-- api:start: generated from openapi.yaml by `npm run generate`; edit the contract, not the screen -->'
/** The line after it. */
export const SCREEN_END = '<!-- api:end -->'

const readmePath = fileURLToPath(new URL('../README.md', import.meta.url))
const contractPath = fileURLToPath(new URL('../openapi.yaml', import.meta.url))
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

type Schema = OpenAPI.SchemaObject & { $ref?: string }

/** The object `#/a/b` names in `document`. */
function resolve<T>(document: OpenAPI.Document, value: T | OpenAPI.ReferenceObject): T {
  if (typeof value !== 'object' || value === null || !('$ref' in value)) return value
  const target = value.$ref
    .slice(2)
    .split('/')
    .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], document)
  return resolve(document, target as T)
}

/** `Name {"member": <format or type[, optional]>, …}`, members of `allOf` merged. */
function shape(document: OpenAPI.Document, schema: Schema): string {
  const name = schema.$ref?.split('/').at(-1)
  const parts = [resolve<Schema>(document, schema)].flatMap((s) => (s.allOf ?? [s]).map((p) => resolve(document, p)))
  const required = new Set(parts.flatMap((part) => part.required ?? []))
  const members = parts.flatMap((part) =>
    Object.entries(part.properties ?? {}).map(([member, value]) => {
      const property = resolve<Schema>(document, value)
      const kind = String(property.format ?? property.type)
      return `"${member}": <${kind}${required.has(member) ? '' : ', optional'}>`
    }),
  )
  return `${name === undefined ? '' : `${name} `}{${members.join(', ')}}`
}

/** The JSON schema of a request or response, if it has one. */
function jsonSchema(
  document: OpenAPI.Document,
  content: OpenAPI.RequestBodyObject | OpenAPI.ResponseObject | OpenAPI.ReferenceObject,
): Schema | undefined {
  return resolve<OpenAPI.RequestBodyObject | OpenAPI.ResponseObject>(document, content).content?.['application/json']
    ?.schema as Schema | undefined
}

/** The screen: a text block of the operations, then a table of what each error status means. */
export function apiScreen(document: OpenAPI.Document): string {
  const lines: string[] = []
  const meanings = new Map<string, Set<string>>()
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item?.[method]
      if (operation === undefined) continue
      const security = operation.security ?? document.security ?? []
      const schemes = security.flatMap((requirement) => Object.keys(requirement))
      const headers = [
        ...schemes.map((scheme) => {
          const defined = resolve(document, document.components!.securitySchemes![scheme]!)
          return defined.type === 'http' && defined.scheme === 'bearer' ? 'Authorization: Bearer <token>' : scheme
        }),
        ...(operation.requestBody === undefined ? [] : ['Content-Type: application/json']),
      ]
      lines.push(`${method.toUpperCase()} ${path}    ${operation.operationId}: ${operation.summary}`)
      lines.push(`  ${headers.length === 0 ? 'public' : headers.join(', ')}`)
      for (const parameter of (operation.parameters ?? []).map((p) => resolve<OpenAPI.ParameterObject>(document, p)))
        lines.push(
          `  ${parameter.name} (${parameter.in}) <${String(resolve<Schema>(document, parameter.schema!).format)}>`,
        )
      const body = operation.requestBody === undefined ? undefined : jsonSchema(document, operation.requestBody)
      if (body !== undefined) lines.push(`  request  ${shape(document, body)}`)
      const errors = new Map<string, string[]>()
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const schema = jsonSchema(document, response)
        const answer = schema === undefined ? '(no body)' : shape(document, schema)
        if (!status.startsWith('2')) {
          errors.set(answer, [...(errors.get(answer) ?? []), status])
          const sentence =
            /^.*?\.(?=\s|$)/s.exec(resolve<OpenAPI.ResponseObject>(document, response).description.trim())?.[0] ?? ''
          meanings.set(status, (meanings.get(status) ?? new Set()).add(sentence.replace(/\s+/g, ' ')))
        } else lines.push(`  ${status}      ${answer}`)
      }
      for (const [answer, statuses] of errors) lines.push(`  ${statuses.join(' ')}  ${answer}`)
    }
  }
  const rows = [...meanings]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, sentences]) => `| ${status} | ${[...sentences].join(' / ').replaceAll('|', '\\|')} |`)
  return ['```text', ...lines, '```', '', '| Status | Meaning (openapi.yaml) |', '|---|---|', ...rows].join('\n')
}

/**
 * `readme` with the text between its screen markers replaced by `screen`.
 * @throws {Error} when it lacks either marker.
 */
export function withScreen(readme: string, screen: string): string {
  const start = readme.indexOf(SCREEN_START)
  const end = readme.indexOf(SCREEN_END)
  if (start === -1 || end < start) throw new Error(`no "${SCREEN_START}" … "${SCREEN_END}" markers`)
  return `${readme.slice(0, start + SCREEN_START.length)}\n${screen}\n${readme.slice(end)}`
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const path = args.find((arg) => arg !== '--check') ?? readmePath
  const current = readFileSync(path, 'utf8')
  const expected = withScreen(current, apiScreen(parse(readFileSync(contractPath, 'utf8')) as OpenAPI.Document))
  if (current !== expected && args.includes('--check')) {
    console.error(`${path}: "The API in a screen" is not openapi.yaml's; run \`npm run generate\``)
    process.exitCode = 1
  } else if (current !== expected) writeFileSync(path, expected)
}
