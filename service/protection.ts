/**
 * Third-party protections, kept apart from the application's own plugins
 * (STYLE.md, after fastify/demo): security headers (helmet), CORS, per-token rate
 * limiting, load shedding (under-pressure).
 *
 * @module
 */
import { createHash } from 'node:crypto'
import cors from '@fastify/cors'
import helmet from '@fastify/helmet'
import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { Redis } from 'ioredis'
import type { Config } from './config.js'

/** Settings of the protections. */
export type ProtectionConfig = Pick<
  Config,
  'rateLimitMax' | 'rateLimitWindowMs' | 'rateLimitRedisUrl' | 'loadShedMaxEventLoopDelayMs' | 'loadShedMaxHeapBytes' | 'corsOrigins'
>

/**
 * Registers helmet, CORS (only when origins are configured) and under-pressure, and
 * prepares the rate limiter.
 *
 * @returns the per-token rate-limit hook to run after authentication on the
 *   contract's routes (429 with `Retry-After`, RFC 6585 §4), or `undefined` when
 *   rate limiting is off (`RATE_LIMIT_MAX=0`).
 */
export async function registerProtection(app: FastifyInstance, config: ProtectionConfig): Promise<onRequestAsyncHookHandler | undefined> {
  await app.register(helmet, {
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
  const redis = config.rateLimitRedisUrl === undefined ? undefined : new Redis(config.rateLimitRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000 })
  if (redis !== undefined) app.addHook('onClose', async () => void redis.disconnect())
  await app.register(rateLimit, {
    global: false,
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindowMs,
    ...(redis === undefined ? {} : { redis, nameSpace: 'plant-store-rate-limit:' }),
    // If Redis is unreachable, serve rather than refuse everyone (fail open).
    skipOnError: true,
  })
  return app.rateLimit({ keyGenerator: tokenKey })
}

/**
 * Rate-limit key: a hash of the bearer token (authentication has already run), so
 * every token has its own budget and no token is kept in memory or Redis as is.
 */
function tokenKey(request: FastifyRequest): string {
  const token = (request.headers.authorization as string).slice('bearer '.length).trim()
  return createHash('sha256').update(token).digest('base64url')
}
