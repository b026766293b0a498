/**
 * The shape of fastify-openapi-glue's service class, derived from the types that
 * openapi-typescript generates from openapi.yaml (`operations`): one method per
 * `operationId`, its request and replies typed by the operation. A service class
 * that `implements ServiceHandlers<operations>` fails to compile when an operation
 * has no method ("Property 'getPlant' is missing in type …") or a method's types
 * drift from the document.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'

/** The `application/json` body of a generated request body or response, or `undefined` where there is none. */
type JsonBody<T> = T extends { content: { 'application/json': infer Body } } ? Body : undefined

/** The parameters of one location (`path`, `query`, `header`) of an operation; `unknown` when it declares none. */
type ParametersIn<Operation, In extends string> = Operation extends { parameters: { [K in In]?: infer Declared } }
  ? [NonNullable<Declared>] extends [never]
    ? unknown
    : NonNullable<Declared>
  : unknown

/** The responses of an operation, keyed by status code. */
type Responses<Operation> = Operation extends { responses: infer R } ? R : never

/** The reply body of each declared status of an operation (Fastify checks `reply.code(s).send(body)` against it). */
export type ReplyBodies<Operation> = { [Status in keyof Responses<Operation>]: JsonBody<Responses<Operation>[Status]> }

/** The body of the operation's 2xx responses: what its handler resolves to. */
export type SuccessBody<Operation> = {
  [Status in keyof Responses<Operation>]: `${Status & (string | number)}` extends `2${string}` ? JsonBody<Responses<Operation>[Status]> : never
}[keyof Responses<Operation>]

/** Fastify's route generic of an operation: body, path and query parameters, headers, and replies. */
export interface OperationRoute<Operation> {
  Body: Operation extends { requestBody?: infer Body } ? JsonBody<Body> : undefined
  Params: ParametersIn<Operation, 'path'>
  Querystring: ParametersIn<Operation, 'query'>
  Headers: ParametersIn<Operation, 'header'>
  Reply: ReplyBodies<Operation>
}

/** The request a handler of the operation receives, already validated against the document. */
export type OperationRequest<Operation> = FastifyRequest<OperationRoute<Operation>>

/** The reply of a handler of the operation. */
export type OperationReply<Operation> = FastifyReply<OperationRoute<Operation>>

/**
 * The handler of one operation: resolves to a 2xx body, or sends through `reply` and
 * returns it; other statuses are thrown (`HttpError`) or sent with `reply.code`.
 */
export type OperationHandler<Operation> = (
  request: OperationRequest<Operation>,
  reply: OperationReply<Operation>,
) => Promise<SuccessBody<Operation> | OperationReply<Operation>>

/**
 * The service class of fastify-openapi-glue for a document's generated
 * `operations`: a handler per `operationId`.
 *
 * @typeParam Operations - openapi-typescript's `operations` interface.
 */
export type ServiceHandlers<Operations> = { [OperationId in keyof Operations]: OperationHandler<Operations[OperationId]> }
