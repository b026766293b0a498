/**
 * Authentication: glue's security class, and the refusal of a token in the URL.
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { HttpError, UnauthorizedError } from '../errors.js'

type VerifyBearerAuth = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void

/** Realm named in the `WWW-Authenticate` challenge (RFC 6750 §3). */
const REALM = 'plant-store'

const bearerScheme = /^bearer /i

/** fastify-openapi-glue's security class: one method per security scheme of openapi.yaml. */
export class Security {
  /** @param verifyBearerAuth - @fastify/bearer-auth's check: constant-time, scheme case-insensitive (RFC 9110 §11.1). */
  constructor(private readonly verifyBearerAuth: VerifyBearerAuth) {}

  /**
   * `bearerAuth` (HTTP bearer), run in `onRequest`, before the body is read (`operation-routes.ts`).
   * @throws {UnauthorizedError} 401 with the RFC 6750 §3 challenge; `invalid_token` when a bearer token was sent.
   */
  bearerAuth(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    return new Promise((resolve, reject) => {
      this.verifyBearerAuth(request, reply, (failure) => {
        if (failure === undefined) resolve()
        else reject(new UnauthorizedError(REALM, bearerScheme.test(request.headers.authorization ?? '')))
      })
    })
  }
}

/**
 * Refuses the token as the `access_token` query parameter, which RFC 6750 §2.3 allows:
 * URLs are logged and cached along the way.
 * @throws {HttpError} 400 `invalid_request` (RFC 6750 §3.1).
 */
export function refuseTokenInQuery(request: FastifyRequest): void {
  if (Object.hasOwn(request.query as object, 'access_token')) {
    throw new HttpError(400, 'invalid_request: send the bearer token in the Authorization header, never in the URL (RFC 6750 §2.3)', {
      'www-authenticate': `Bearer realm="${REALM}", error="invalid_request"`,
    })
  }
}
