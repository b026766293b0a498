/** The security class, one method per security scheme of openapi.yaml. @module */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { HttpError, UnauthorizedError } from '../errors.ts'
import type { RouteLimits } from '../plugins/protection/index.ts'

type VerifyBearerAuth = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void

/** RFC 6750 §3. */
const REALM = 'plant-store'

const bearerScheme = /^bearer /i

/** fastify-openapi-glue's `securityHandlers`: each method accepts a request or throws. */
export class Security {
  readonly #verifyBearerAuth: VerifyBearerAuth
  readonly #limits: RouteLimits

  /**
   * @param verifyBearerAuth - @fastify/bearer-auth's check: constant-time, scheme case-insensitive (RFC 9110 §11.1).
   * @param limits - the failed-authentication budget per address, and each token's budget.
   */
  constructor(verifyBearerAuth: VerifyBearerAuth, limits: RouteLimits) {
    this.#verifyBearerAuth = verifyBearerAuth
    this.#limits = limits
  }

  /**
   * The `bearerAuth` scheme (RFC 6750).
   * @throws {HttpError} 400 for a token in the query, from {@link refuseTokenInQuery}.
   * @throws {UnauthorizedError} 401 with the RFC 6750 §3 challenge; `invalid_token` when a bearer token was sent.
   * @throws {HttpError} 429 past the address's budget of failures.
   * @throws @fastify/rate-limit's 429 error past the token's budget.
   */
  async bearerAuth(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    refuseTokenInQuery(request)
    const accepted = await new Promise<boolean>((resolve) =>
      this.#verifyBearerAuth(request, reply, (failure) => resolve(failure === undefined)),
    )
    if (!accepted) {
      await this.#limits.countFailedAuthentication?.(request)
      throw new UnauthorizedError(REALM, bearerScheme.test(request.headers.authorization ?? ''))
    }
    await this.#limits.limitToken?.(request, reply)
  }
}

/**
 * Refuses `access_token` in the query (RFC 6750 §2.3 allows it, but URLs get logged).
 * @throws {HttpError} 400 (RFC 6750 §3.1).
 */
function refuseTokenInQuery(request: FastifyRequest): void {
  const query = request.query
  if (typeof query === 'object' && query !== null && Object.hasOwn(query, 'access_token')) {
    throw new HttpError(
      400,
      'invalid_request: send the bearer token in the Authorization header, never in the URL (RFC 6750 §2.3)',
      {
        'www-authenticate': `Bearer realm="${REALM}", error="invalid_request"`,
      },
    )
  }
}
