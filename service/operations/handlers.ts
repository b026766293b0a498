/** The service class's types, from openapi-typescript's `operations`: drift from openapi.yaml fails. @module */
import type { FastifyReply, FastifyRequest } from 'fastify'

type JsonBody<T> = T extends { content: { 'application/json': infer Body } } ? Body : undefined

type ParametersIn<Operation, In extends string> = Operation extends { parameters: { [K in In]?: infer Declared } }
  ? [NonNullable<Declared>] extends [never]
    ? unknown
    : NonNullable<Declared>
  : unknown

type Responses<Operation> = Operation extends { responses: infer R } ? R : never

export type ReplyBodies<Operation> = { [Status in keyof Responses<Operation>]: JsonBody<Responses<Operation>[Status]> }

export type SuccessBody<Operation> = {
  [Status in keyof Responses<Operation>]: `${Status & (string | number)}` extends `2${string}`
    ? JsonBody<Responses<Operation>[Status]>
    : never
}[keyof Responses<Operation>]

export interface OperationRoute<Operation> {
  Body: Operation extends { requestBody?: infer Body } ? JsonBody<Body> : undefined
  Params: ParametersIn<Operation, 'path'>
  Querystring: ParametersIn<Operation, 'query'>
  Headers: ParametersIn<Operation, 'header'>
  Reply: ReplyBodies<Operation>
}

export type OperationRequest<Operation> = FastifyRequest<OperationRoute<Operation>>

export type OperationReply<Operation> = FastifyReply<OperationRoute<Operation>>

/** Other statuses than 2xx are thrown (`HttpError`). */
export type OperationHandler<Operation> = (
  request: OperationRequest<Operation>,
  reply: OperationReply<Operation>,
) => Promise<SuccessBody<Operation> | OperationReply<Operation>>

export type ServiceHandlers<Operations> = {
  [OperationId in keyof Operations]: OperationHandler<Operations[OperationId]>
}
