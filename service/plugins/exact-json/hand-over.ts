/** Each `int64` member of a body or parameter handed to the handler as its exact `bigint` (`onRoute`). @module */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { EXACT, forValidation, isHolder, numberOf, PLAIN_INTEGER } from './integers.ts'

interface Schema extends Partial<Record<(typeof UNREAD_KEYWORDS)[number], unknown>> {
  type?: string | string[]
  format?: string
  properties?: Record<string, Schema>
  items?: Schema
  allOf?: Schema[]
  content?: Record<string, { schema?: Schema }>
}

/** Keywords below which an `int64` cannot be located: refused at start-up. */
const UNREAD_KEYWORDS = ['prefixItems', 'oneOf', 'anyOf', 'additionalProperties', 'patternProperties'] as const

const EACH_ITEM = Symbol('each item')

type Step = string | typeof EACH_ITEM
/** Member names from a request part to an `int64`, `EACH_ITEM` for every item of an array. */
type MemberPath = readonly [Step, ...Step[]]

/** @throws {Error} for an `int64` below any other keyword ({@link UNREAD_KEYWORDS}), naming where. */
function int64Paths(schema: Schema | undefined, at: readonly Step[] = []): MemberPath[] {
  if (schema === undefined) return []
  if (schema.format === 'int64') {
    const [first, ...rest] = at
    if (first === undefined) throw new Error('An int64 that is a whole request part cannot be handed over exactly')
    return [[first, ...rest]]
  }
  const nested = [...Object.values(schema.content ?? {}).map((media) => media.schema), ...(schema.allOf ?? [])]
  const inside = Object.entries(schema.properties ?? {}).flatMap(([name, member]) => int64Paths(member, [...at, name]))
  for (const keyword of UNREAD_KEYWORDS) {
    const where = ['', ...at.map((name) => (name === EACH_ITEM ? 'items' : name)), keyword].join('/')
    if (JSON.stringify(schema[keyword] ?? null).includes('"format":"int64"'))
      throw new Error(`An int64 below ${where} cannot be handed over exactly`)
  }
  return [
    ...inside,
    ...int64Paths(schema.items, [...at, EACH_ITEM]),
    ...nested.flatMap((member) => int64Paths(member, at)),
  ]
}

function handOver(holder: unknown, [name, ...rest]: MemberPath): void {
  if (!isHolder(holder)) return
  if (name === EACH_ITEM && !Array.isArray(holder)) return
  const [next, ...after] = rest
  for (const member of name === EACH_ITEM ? Object.keys(holder) : [name]) {
    const value = holder[member]
    if (next !== undefined) handOver(value, [next, ...after])
    else if (typeof value === 'number') holder[member] = holder[EXACT]?.get(member) ?? BigInt(value)
  }
}

const PARAMETERS = [
  { part: 'params', schema: 'params' },
  { part: 'query', schema: 'querystring' },
] as const
const PARTS = [{ part: 'body', schema: 'body' }, ...PARAMETERS] as const

/**
 * `onRoute` hook: plain-integer parameters become numbers before validation, `int64` members `bigint` after.
 * @throws {Error} see {@link int64Paths}.
 */
export function exactInt64(route: RouteOptions): void {
  const schema = (name: (typeof PARTS)[number]['schema']) => schemaOf(route.schema?.[name])
  const readers = PARAMETERS.map(({ part, schema: name }) => ({ part, integers: integerMembers(schema(name)) })).filter(
    ({ integers }) => integers.length > 0,
  )
  if (readers.length > 0) {
    route.preValidation = [
      function readIntegerParameters(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
        for (const { part, integers } of readers)
          request[part] = readIntegers(Object.assign({}, request[part]), integers)
        done()
      },
      ...[route.preValidation ?? []].flat(),
    ]
  }
  const handOvers = PARTS.map(({ part, schema: name }) => ({ part, paths: int64Paths(schema(name)) })).filter(
    ({ paths }) => paths.length > 0,
  )
  if (handOvers.length === 0) return
  route.preHandler = [
    ...[route.preHandler ?? []].flat(),
    function handOverExactInt64(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
      for (const { part, paths } of handOvers) for (const path of paths) handOver(request[part], path)
      done()
    },
  ]
}

/** A schema object; `true`, `false` and no schema hold no `int64`. */
function schemaOf(value: unknown): Schema | undefined {
  return typeof value === 'object' && value !== null ? value : undefined
}

function integerMembers(schema: Schema | undefined): string[] {
  return Object.entries(schema?.properties ?? {})
    .filter(([, member]) => [member.type].flat().includes('integer'))
    .map(([name]) => name)
}

function readIntegers(holder: Record<string, unknown>, integers: readonly string[]): Record<string, unknown> {
  for (const name of integers) {
    const text = holder[name]
    if (typeof text !== 'string' || !PLAIN_INTEGER.test(text)) continue
    holder[name] = numberOf(text)
    holder[name] = forValidation(holder, name)
  }
  return holder
}
