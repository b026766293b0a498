/**
 * The security class of fastify-openapi-glue: one method per security scheme of
 * openapi.yaml (`components.securitySchemes`).
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { HttpError, UnauthorizedError } from './errors.js'

/** @fastify/bearer-auth's `verifyBearerAuth` (registered with `addHook: false`). */
type VerifyBearerAuth = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void

/** Realm named in the `WWW-Authenticate` challenge (RFC 6750 §3). */
const REALM = 'plant-store'

const bearerScheme = /^bearer /i

/** Implements the security schemes of openapi.yaml. */
export class Security {
  /**
   * @param verifyBearerAuth - @fastify/bearer-auth's check: constant-time comparison
   *   against the configured tokens, scheme name matched case-insensitively
   *   (`specCompliance: 'rfc6749'`, as RFC 9110 §11.1 requires).
   */
  constructor(private readonly verifyBearerAuth: VerifyBearerAuth) {}

  /**
   * `bearerAuth`: HTTP bearer (openapi.yaml, components.securitySchemes). Runs in
   * `onRequest`, before the body is read (`operation-routes.ts`).
   *
   * @throws {UnauthorizedError} 401 with the RFC 6750 §3 challenge: without an
   *   error code when no bearer token was sent, with `error="invalid_token"` when
   *   the token sent is not valid.
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
 * RFC 6750 §2.3 lets a server accept the token as the `access_token` query
 * parameter; this one does not, since URLs are logged and cached along the way.
 * Such a request is refused before anything reads it.
 *
 * @throws {HttpError} 400 `invalid_request` (RFC 6750 §3.1) when the query has `access_token`.
 */
export function refuseTokenInQuery(request: FastifyRequest): void {
  if (Object.hasOwn(request.query as object, 'access_token')) {
    throw new HttpError(400, 'invalid_request: send the bearer token in the Authorization header, never in the URL (RFC 6750 §2.3)', {
      'www-authenticate': `Bearer realm="${REALM}", error="invalid_request"`,
    })
  }
}
