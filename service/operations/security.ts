/** Authentication: glue's security class, and the refusal of a token in the URL. @module */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { HttpError, UnauthorizedError } from '../errors.ts'

type VerifyBearerAuth = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void

/** RFC 6750 §3. */
const REALM = 'plant-store'

const bearerScheme = /^bearer /i

/** glue's security class: one method per security scheme of openapi.yaml. */
export class Security {
  private readonly verifyBearerAuth: VerifyBearerAuth

  /** @param verifyBearerAuth - @fastify/bearer-auth's check: constant-time, scheme case-insensitive (RFC 9110 §11.1). */
  constructor(verifyBearerAuth: VerifyBearerAuth) {
    this.verifyBearerAuth = verifyBearerAuth
  }

  /** @throws {UnauthorizedError} 401 with the RFC 6750 §3 challenge; `invalid_token` when a bearer token was sent. */
  bearerAuth(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    return new Promise((resolve, reject) => {
      this.verifyBearerAuth(request, reply, (failure) => {
        if (failure === undefined) resolve()
        else reject(new UnauthorizedError(REALM, bearerScheme.test(request.headers.authorization ?? '')))
      })
    })
  }
}

/** Refuses `access_token` in the query (RFC 6750 §2.3 allows it, but URLs get logged). @throws {HttpError} 400 (RFC 6750 §3.1). */
export function refuseTokenInQuery(request: FastifyRequest): void {
  if (Object.hasOwn(request.query as object, 'access_token')) {
    throw new HttpError(
      400,
      'invalid_request: send the bearer token in the Authorization header, never in the URL (RFC 6750 §2.3)',
      {
        'www-authenticate': `Bearer realm="${REALM}", error="invalid_request"`,
      },
    )
  }
}
