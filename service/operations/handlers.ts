/** The service class's types, from openapi-typescript's `operations`: drift from openapi.yaml fails. @module */
import type { FastifyReply, FastifyRequest } from 'fastify'

type JsonBody<T> = T extends { content: { 'application/json': infer Body } } ? Body : undefined

type ParametersIn<Operation, In extends string> = Operation extends { parameters: { [K in In]?: infer Declared } }
  ? [NonNullable<Declared>] extends [never]
    ? unknown
    : NonNullable<Declared>
  : unknown

type Responses<Operation> = Operation extends { responses: infer R } ? R : never

/** Each declared status's JSON body (`undefined` for none). */
export type ReplyBodies<Operation> = { [Status in keyof Responses<Operation>]: JsonBody<Responses<Operation>[Status]> }

/** The JSON body of any 2xx the operation declares: what its handler returns. */
export type SuccessBody<Operation> = {
  [Status in keyof Responses<Operation>]: `${Status & (string | number)}` extends `2${string}`
    ? JsonBody<Responses<Operation>[Status]>
    : never
}[keyof Responses<Operation>]

/** Fastify's route generic of an operation: its body, parameters, headers and replies. */
export interface OperationRoute<Operation> {
  Body: Operation extends { requestBody?: infer Body } ? JsonBody<Body> : undefined
  Params: ParametersIn<Operation, 'path'>
  Querystring: ParametersIn<Operation, 'query'>
  Headers: ParametersIn<Operation, 'header'>
  Reply: ReplyBodies<Operation>
}

/** The request a handler of the operation receives, validated against its schema. */
export type OperationRequest<Operation> = FastifyRequest<OperationRoute<Operation>>

/** The reply of the operation, typed by its declared statuses. */
export type OperationReply<Operation> = FastifyReply<OperationRoute<Operation>>

/** Other statuses than 2xx are thrown (`HttpError`). */
export type OperationHandler<Operation> = (
  request: OperationRequest<Operation>,
  reply: OperationReply<Operation>,
) => Promise<SuccessBody<Operation> | OperationReply<Operation>>

/** A handler for every operationId: what the service class implements for glue's `serviceHandlers`. */
export type ServiceHandlers<Operations> = {
  [OperationId in keyof Operations]: OperationHandler<Operations[OperationId]>
}
