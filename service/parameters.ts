/**
 * Path and query parameters read by their schema. They arrive as strings, and the
 * service validates without type coercion (a JSON body's `"1"` is not an integer),
 * so an `integer` parameter could never validate. Before validation, each one
 * whose text is a plain decimal integer (`-?(0|[1-9][0-9]*)`) is read as the
 * number it spells, by the same exact rule as request bodies (service/json-body.ts):
 * within int64 its exact value is available through `exactInteger(request.params,
 * name)` beyond 2^53, outside int64 the `int64` format rejects it. Any other text
 * (`1.5`, `1e3`, `01`, `+1`) stays a string, so validation answers 400
 * `params/id must be integer`. Only a parameter's own `type` is read: one whose
 * schema is a `$ref` is left as text. Header parameters are not read.
 *
 * @module
 */
import type { FastifyRequest, RouteOptions } from 'fastify'
import { parseJsonBody } from './json-body.js'

/** A plain decimal integer: no sign but `-`, no leading zeros, no fraction or exponent. */
const plainInteger = /^-?(?:0|[1-9]\d*)$/

/** The JSON Schema of one request part (`params`, `querystring`) as glue builds it. */
interface PartSchema {
  properties?: Record<string, { type?: string | string[] }>
}

/** The names of the members of `schema` whose type is (or includes) `integer`. */
function integerMembers(schema: PartSchema | undefined): string[] {
  return Object.entries(schema?.properties ?? {})
    .filter(([, member]) => [member.type].flat().includes('integer'))
    .map(([name]) => name)
}

/**
 * `holder` re-read as JSON in which each of `integers` that is a plain integer
 * string is a number literal; every other member keeps its value.
 */
function readIntegers(holder: Record<string, unknown>, integers: readonly string[]): Record<string, unknown> {
  const members = Object.keys(holder).map((name) => {
    const value = holder[name]
    const literal = integers.includes(name) && typeof value === 'string' && plainInteger.test(value) ? value : JSON.stringify(value)
    return `${JSON.stringify(name)}:${literal}`
  })
  return parseJsonBody(`{${members.join(',')}}`) as Record<string, unknown>
}

/**
 * An `onRoute` hook: gives a contract route whose path or query parameters include
 * an `integer` a `preValidation` step that reads them as described above. Other
 * routes are left as they are.
 */
export function readParametersBySchema(route: RouteOptions): void {
  const schema = route.schema as Partial<Record<'params' | 'querystring', PartSchema>> | undefined
  const parts = [
    { part: 'params' as const, integers: integerMembers(schema?.params) },
    { part: 'query' as const, integers: integerMembers(schema?.querystring) },
  ].filter(({ integers }) => integers.length > 0)
  if (parts.length === 0) return
  route.preValidation = [
    async (request: FastifyRequest) => {
      for (const { part, integers } of parts) request[part] = readIntegers(request[part] as Record<string, unknown>, integers)
    },
    ...[route.preValidation ?? []].flat(),
  ]
}
