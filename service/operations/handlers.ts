/**
 * The type of glue's service class, from openapi-typescript's `operations`: a class that
 * `implements ServiceHandlers<operations>` fails to compile when it misses an operation or
 * its types drift from openapi.yaml.
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

type Responses<Operation> = Operation extends { responses: infer R } ? R : never

/** The reply body of each declared status of an operation (Fastify checks `reply.code(s).send(body)` against it). */
export type ReplyBodies<Operation> = { [Status in keyof Responses<Operation>]: JsonBody<Responses<Operation>[Status]> }

/** The body of the operation's 2xx responses: what its handler resolves to. */
export type SuccessBody<Operation> = {
  [Status in keyof Responses<Operation>]: `${Status & (string | number)}` extends `2${string}` ? JsonBody<Responses<Operation>[Status]> : never
}[keyof Responses<Operation>]

export interface OperationRoute<Operation> {
  Body: Operation extends { requestBody?: infer Body } ? JsonBody<Body> : undefined
  Params: ParametersIn<Operation, 'path'>
  Querystring: ParametersIn<Operation, 'query'>
  Headers: ParametersIn<Operation, 'header'>
  Reply: ReplyBodies<Operation>
}

/** The request a handler of the operation receives, already validated against the document. */
export type OperationRequest<Operation> = FastifyRequest<OperationRoute<Operation>>

export type OperationReply<Operation> = FastifyReply<OperationRoute<Operation>>

/** Resolves to a 2xx body, or sends it through `reply`; other statuses are thrown (`HttpError`). */
export type OperationHandler<Operation> = (
  request: OperationRequest<Operation>,
  reply: OperationReply<Operation>,
) => Promise<SuccessBody<Operation> | OperationReply<Operation>>

/** glue's service class for openapi-typescript's `operations`: a handler per `operationId`. */
export type ServiceHandlers<Operations> = { [OperationId in keyof Operations]: OperationHandler<Operations[OperationId]> }
