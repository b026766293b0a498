/**
 * Breaking changes between a released OpenAPI 3.1 contract and a newer one, for
 * the operations a client of the released contract calls.
 *
 * Rules, from what a client built against the released contract relies on:
 * - every released operation (path and method) still exists, with the same `operationId`;
 * - every released response status and media type, response header and request media
 *   type still exists;
 * - request schemas accept everything they accepted: no new required field, no narrowed
 *   `type`, no added or changed `format`, `pattern` or `enum`, no tighter bound, no
 *   removed field (`additionalProperties: false` may be added later), an optional body
 *   stays optional;
 * - response schemas promise everything they promised: no removed or no-longer-required
 *   field, no widened `type`, no removed or changed `format`, `pattern` or `enum`, no
 *   looser bound.
 *
 * Regular expressions are compared as text: whether one pattern's language contains
 * another's is not decided, so any change to a `pattern` is reported.
 *
 * The command line is api/check.ts (`npm run check:compat`).
 *
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import semver from 'semver'
import { parse } from 'yaml'

/** A JSON value as parsed from YAML. */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
/** A JSON object. */
type Obj = { [key: string]: Json }

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
/** Keywords whose change or addition narrows what a value may be. */
const EXACT = ['format', 'pattern'] as const
/** Lower bounds: raising one narrows. */
const LOWER = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'] as const
/** Upper bounds: lowering one narrows. */
const UPPER = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'] as const

/** Whether `value` is a JSON object (not an array, not null). */
function isObj(value: Json | undefined): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** `value` as an object, `{}` when it is not one. */
function obj(value: Json | undefined): Obj {
  return isObj(value) ? value : {}
}

/** Follows a local `$ref` (`#/a/b`, JSON Pointer, RFC 6901) to the object it names. */
function deref(doc: Obj, node: Json | undefined): Obj {
  let current = obj(node)
  for (let hops = 0; typeof current.$ref === 'string' && hops < 64; hops++) {
    let target: Json | undefined = doc
    for (const part of current.$ref.replace(/^#\/?/, '').split('/').filter(Boolean)) {
      target = obj(target)[part.replaceAll('~1', '/').replaceAll('~0', '~')]
    }
    current = obj(target)
  }
  return current
}

/**
 * The schema as one object: `$ref`s followed and `allOf` members merged (their
 * properties and required lists joined; the first member's other keywords win).
 */
function flatten(doc: Obj, node: Json | undefined): Obj {
  const { allOf, ...own } = deref(doc, node)
  const parts = [own, ...(Array.isArray(allOf) ? allOf.map((part) => flatten(doc, part)) : [])]
  const merged: Obj = {}
  const properties: Obj = {}
  const required = new Set<string>()
  for (const part of parts) {
    Object.assign(properties, obj(part.properties))
    for (const name of Array.isArray(part.required) ? part.required : []) required.add(String(name))
    for (const [key, value] of Object.entries(part)) if (!(key in merged)) merged[key] = value
  }
  if (Object.keys(properties).length > 0) merged.properties = properties
  if (required.size > 0) merged.required = [...required]
  return merged
}

/** The JSON Schema types a schema allows; `integer` is within `number`. Undefined: any. */
function types(schema: Obj): Set<string> | undefined {
  const declared = schema.type
  if (declared === undefined) return undefined
  const list = new Set((Array.isArray(declared) ? declared : [declared]).map(String))
  if (list.has('number')) list.add('integer')
  return list
}

/** Which way a schema is read: a request schema must not narrow, a response schema must not widen. */
type Direction = 'request' | 'response'

/**
 * Breaking differences between two schemas at `where`. For a request, `older` must be
 * within `newer`; for a response, `newer` within `older`. Recurses into properties and
 * array items.
 */
function compareSchemas(
  docs: { older: Obj; newer: Obj },
  olderNode: Json | undefined,
  newerNode: Json | undefined,
  direction: Direction,
  where: string,
  seen = new Set<string>(),
): string[] {
  // A recursive schema recurses through a $ref: each pair of $refs is compared once.
  const key = `${direction} ${String(obj(olderNode).$ref)} ${String(obj(newerNode).$ref)}`
  if (key !== `${direction} undefined undefined` && seen.has(key)) return []
  seen.add(key)
  const older = flatten(docs.older, olderNode)
  const newer = flatten(docs.newer, newerNode)
  // The schema that must contain the other: the newer one for requests, the older one for responses.
  const [outer, inner] = direction === 'request' ? [newer, older] : [older, newer]
  const narrowed = direction === 'request' ? 'narrowed' : 'widened'
  const found: string[] = []

  const outerTypes = types(outer)
  const innerTypes = types(inner)
  if (outerTypes && (!innerTypes || [...innerTypes].some((type) => !outerTypes.has(type)))) {
    found.push(`${where}: type ${narrowed} (${JSON.stringify(older.type)} -> ${JSON.stringify(newer.type)})`)
  }
  for (const keyword of EXACT) {
    if (outer[keyword] !== undefined && outer[keyword] !== inner[keyword]) {
      found.push(
        `${where}: ${keyword} ${narrowed} (${JSON.stringify(older[keyword])} -> ${JSON.stringify(newer[keyword])})`,
      )
    }
  }
  for (const [bounds, tighter] of [
    [LOWER, (o: number, i: number) => o > i],
    [UPPER, (o: number, i: number) => o < i],
  ] as const) {
    for (const keyword of bounds) {
      const o = outer[keyword]
      const i = inner[keyword]
      if (typeof o === 'number' && (typeof i !== 'number' || tighter(o, i))) {
        found.push(
          `${where}: ${keyword} ${narrowed} (${JSON.stringify(older[keyword])} -> ${JSON.stringify(newer[keyword])})`,
        )
      }
    }
  }
  if (Array.isArray(outer.enum)) {
    const allowed = new Set(outer.enum.map((value) => JSON.stringify(value)))
    const values = Array.isArray(inner.enum) ? inner.enum : undefined
    if (!values || values.some((value) => !allowed.has(JSON.stringify(value)))) {
      found.push(`${where}: enum ${narrowed}`)
    }
  }

  const olderProperties = obj(older.properties)
  const newerProperties = obj(newer.properties)
  const olderRequired = new Set(Array.isArray(older.required) ? older.required : [])
  const newerRequired = new Set(Array.isArray(newer.required) ? newer.required : [])
  for (const name of Object.keys(olderProperties)) {
    if (!(name in newerProperties)) found.push(`${where}.${name}: field removed`)
    else
      found.push(
        ...compareSchemas(docs, olderProperties[name], newerProperties[name], direction, `${where}.${name}`, seen),
      )
  }
  if (direction === 'request') {
    for (const name of newerRequired)
      if (!olderRequired.has(name)) found.push(`${where}.${String(name)}: new required field`)
  } else {
    for (const name of olderRequired)
      if (!newerRequired.has(name)) found.push(`${where}.${String(name)}: no longer required`)
  }
  if (older.items !== undefined || newer.items !== undefined) {
    found.push(...compareSchemas(docs, older.items, newer.items, direction, `${where}[]`, seen))
  }
  return found
}

/** Breaking differences between two `content` maps (media type -> { schema }). */
function compareContent(
  docs: { older: Obj; newer: Obj },
  older: Json | undefined,
  newer: Json | undefined,
  direction: Direction,
  where: string,
): string[] {
  const found: string[] = []
  const newerContent = obj(newer)
  for (const [mediaType, media] of Object.entries(obj(older))) {
    if (!(mediaType in newerContent)) found.push(`${where}: media type ${mediaType} removed`)
    else
      found.push(
        ...compareSchemas(
          docs,
          obj(media).schema,
          obj(newerContent[mediaType]).schema,
          direction,
          `${where} ${mediaType}`,
        ),
      )
  }
  return found
}

/**
 * The breaking changes from `older` (the released contract) to `newer`, one line each;
 * empty when a client of `older` keeps working against `newer`.
 */
export function breakingChanges(older: Obj, newer: Obj): string[] {
  const docs = { older, newer }
  const found: string[] = []
  const newerPaths = obj(newer.paths)
  for (const [path, olderItem] of Object.entries(obj(older.paths))) {
    const newerItem = deref(newer, newerPaths[path])
    for (const method of METHODS) {
      const olderOperation = obj(deref(older, olderItem)[method])
      if (!(method in deref(older, olderItem))) continue
      const operation = `${method.toUpperCase()} ${path}`
      if (!(method in newerItem)) {
        found.push(`${operation}: operation removed`)
        continue
      }
      const newerOperation = obj(newerItem[method])
      if (olderOperation.operationId !== newerOperation.operationId) {
        found.push(
          `${operation}: operationId ${String(olderOperation.operationId)} renamed to ${String(newerOperation.operationId)}`,
        )
      }
      const olderBody = deref(older, olderOperation.requestBody)
      const newerBody = deref(newer, newerOperation.requestBody)
      if (newerBody.required === true && olderBody.required !== true)
        found.push(`${operation} request body: now required`)
      found.push(...compareContent(docs, olderBody.content, newerBody.content, 'request', `${operation} request`))
      const newerResponses = obj(newerOperation.responses)
      for (const [status, olderResponseRef] of Object.entries(obj(olderOperation.responses))) {
        const where = `${operation} ${status}`
        if (!(status in newerResponses)) {
          found.push(`${where}: response status removed`)
          continue
        }
        const olderResponse = deref(older, olderResponseRef)
        const newerResponse = deref(newer, newerResponses[status])
        const newerHeaders = obj(newerResponse.headers)
        for (const header of Object.keys(obj(olderResponse.headers))) {
          if (!(header in newerHeaders)) found.push(`${where}: header ${header} removed`)
        }
        found.push(
          ...compareContent(docs, olderResponse.content, newerResponse.content, 'response', `${where} response`),
        )
      }
    }
  }
  return found
}

/** Reads an OpenAPI document (YAML or JSON) from `path`. */
export function readContract(path: string): Obj {
  return obj(parse(readFileSync(path, 'utf8')) as Json)
}

/** The newest `openapi-<version>.yaml` in `directory`, by semantic version; throws when there is none. */
export function latestReleased(directory: string): string {
  const versions = readdirSync(directory)
    .map((name) => /^openapi-(.+)\.yaml$/.exec(name)?.[1])
    .filter((version): version is string => semver.valid(version) !== null)
  const newest = semver.rsort(versions)[0]
  if (newest === undefined) throw new Error(`No released contract (openapi-<version>.yaml) in ${directory}`)
  return join(directory, `openapi-${newest}.yaml`)
}

/**
 * The command line: compares `args[1]` (default `openapi.yaml`) with `args[0]` (default:
 * the newest `api/released/openapi-<version>.yaml` by semantic version), logs the
 * breaking changes and returns the exit status: 1 when there is one, 0 otherwise.
 */
export function main(args: string[], log: (line: string) => void): number {
  const root = resolve(fileURLToPath(import.meta.url), '../..')
  const released = args[0] ?? latestReleased(join(root, 'api/released'))
  const current = args[1] ?? join(root, 'openapi.yaml')
  const found = breakingChanges(readContract(released), readContract(current))
  log(found.length === 0 ? `${current} is backward compatible with ${released}` : `${current} breaks ${released}:`)
  for (const line of found) log(`  ${line}`)
  return found.length === 0 ? 0 : 1
}
