/**
 * Third-party protections, kept apart from the application's own plugins
 * (STYLE.md, after fastify/demo): security headers (helmet), CORS, per-token rate
 * limiting, load shedding (under-pressure).
 *
 * @module
 */
import { createHash } from 'node:crypto'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import helmet from 'helmet'
import type { Config } from './config.js'

/**
 * Security headers of JSON API responses (OWASP REST Security Cheat Sheet, "Security
 * headers"): no MIME sniffing, never framed, not cached, HTTPS only. Fixed values,
 * set with one call; helmet's HTML-page headers (CSP for scripts, COOP/CORP, …)
 * protect pages, which these responses are not.
 */
export const API_SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
} as const

/** Settings of the protections. */
export type ProtectionConfig = Pick<
  Config,
  'rateLimitMax' | 'rateLimitWindowMs' | 'rateLimitRedisUrl' | 'loadShedMaxEventLoopDelayMs' | 'loadShedMaxHeapBytes' | 'corsOrigins'
>

/**
 * Registers helmet's security headers, CORS (only when origins are configured) and under-pressure, and
 * prepares the rate limiter.
 *
 * @returns the per-token rate-limit hook to run after authentication on the
 *   contract's routes (429 with `Retry-After`, RFC 6585 §4), or `undefined` when
 *   rate limiting is off (`RATE_LIMIT_MAX=0`).
 */
export async function registerProtection(app: FastifyInstance, config: ProtectionConfig): Promise<onRequestAsyncHookHandler | undefined> {
  // helmet's middleware, built once: @fastify/helmet 13 rebuilds it on every request
  // (11 % of the request path in the profile, docs/benchmarks.md).
  const securityHeaders = helmet({
    // Swagger UI runs under this policy: its scripts and styles are served by us;
    // it sets inline styles and uses data: images. No upgrade-insecure-requests:
    // the service may be reached over plain HTTP behind its gateway.
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        fontSrc: ["'self'", 'data:'],
        objectSrc: ["'none'"],
        frameAncestors: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
      },
    },
  })
  app.addHook('onRequest', (request, reply, done) => {
    // JSON answers of the contract's operations get the API set, written at once;
    // helmet's page headers are for Swagger UI and every other route.
    if (request.routeOptions.schema?.operationId !== undefined) {
      reply.headers(API_SECURITY_HEADERS)
      return done()
    }
    securityHeaders(request.raw, reply.raw, (error?: unknown) => done(error as Error | undefined))
  })

  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...config.corsOrigins],
      methods: ['POST'],
      allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
      exposedHeaders: ['x-request-id', 'retry-after', 'www-authenticate'],
      maxAge: 600,
    })
  }

  await app.register(underPressure, {
    maxEventLoopDelay: config.loadShedMaxEventLoopDelayMs,
    maxHeapUsedBytes: config.loadShedMaxHeapBytes,
    retryAfter: 1,
    message: 'The service is overloaded; retry later',
  })

  if (config.rateLimitMax === 0) return undefined
  // ioredis is loaded only when configured (it costs start-up time and memory).
  const redis =
    config.rateLimitRedisUrl === undefined
      ? undefined
      : new (await import('ioredis')).Redis(config.rateLimitRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000 })
  if (redis !== undefined) app.addHook('onClose', async () => void redis.disconnect())
  await app.register(rateLimit, {
    global: false,
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindowMs,
    ...(redis === undefined ? {} : { redis, nameSpace: 'plant-store-rate-limit:' }),
    // If Redis is unreachable, serve rather than refuse everyone (fail open).
    skipOnError: true,
    // The budget is told on 429 (with Retry-After), not on every success: three
    // headers fewer on the hot path.
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
  })
  return app.rateLimit({ keyGenerator: tokenKey })
}

const tokenKeys = new Map<string, string>()

/**
 * Rate-limit key: a hash of the bearer token, so every token has its own budget and
 * no token is kept in Redis as is. Authentication has already run, so only
 * configured tokens arrive here; their hashes are computed once.
 */
function tokenKey(request: FastifyRequest): string {
  const token = (request.headers.authorization as string).slice('bearer '.length).trim()
  let key = tokenKeys.get(token)
  if (key === undefined) tokenKeys.set(token, (key = createHash('sha256').update(token).digest('base64url')))
  return key
}
