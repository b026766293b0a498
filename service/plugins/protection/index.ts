/**
 * Security headers (helmet), CORS, rate limits (@fastify/rate-limit), load shedding (under-pressure): what each
 * guarantees is in README.md.
 * @module
 */
import { createHash } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import rateLimit, { normalizeIP } from '@fastify/rate-limit'
import underPressure, { TYPE_EVENT_LOOP_DELAY } from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import helmet from 'helmet'
import type { Config } from '../../config.ts'
import { HttpError, ServiceUnavailableError } from '../../errors.ts'
import { clientAddress } from '../../logging.ts'
import { SegmentedStore } from './segmented-store.ts'

declare module 'fastify' {
  interface FastifyInstance {
    readonly limits: RouteLimits
  }
}

/** Security headers of JSON API responses (OWASP REST Security Cheat Sheet); helmet's are for HTML pages. */
const API_SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
} as const

/** The settings the protection plugin reads (README.md, "Options"). */
export type ProtectionConfig = Pick<
  Config,
  | 'rateLimitMax'
  | 'rateLimitWindowMs'
  | 'rateLimitRedisUrl'
  | 'authFailureLimitMax'
  | 'authFailureLimitWindowMs'
  | 'loadShedMaxEventLoopDelayMs'
  | 'loadShedMaxHeapBytes'
  | 'corsOrigins'
>

/** The limits around authentication: 429 with `Retry-After` (RFC 6585 §4), shared by replicas through Redis if set. */
export interface RouteLimits {
  /**
   * Per-token limit, after a successful authentication; `undefined` when off (`RATE_LIMIT_MAX=0`).
   * @throws @fastify/rate-limit's 429 error past the budget.
   */
  readonly limitToken: ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined
  /**
   * Counts a failed authentication per address (a valid token is never refused); `undefined` when off.
   * @throws {HttpError} 429 past the budget.
   */
  readonly countFailedAuthentication: ((request: FastifyRequest) => Promise<void>) | undefined
}

const OVERLOADED = 'The service is overloaded; retry later'

/** under-pressure's default, ms. */
const SAMPLE_INTERVAL_MS = 1000

/** Security headers, CORS (when origins are configured), under-pressure, and the rate limits as `app.limits`. */
async function protection(
  app: FastifyInstance,
  { operationMethods, ...config }: ProtectionConfig & { operationMethods: readonly string[] },
): Promise<void> {
  // Built once: @fastify/helmet rebuilds it on every request.
  const securityHeaders = helmet({
    // For Swagger UI; no upgrade-insecure-requests, as the gateway may use plain HTTP.
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
  app.addHook('onRequest', function addSecurityHeaders(request, reply, done) {
    if (request.routeOptions.schema?.operationId !== undefined) {
      reply.headers(API_SECURITY_HEADERS)
      return done()
    }
    // Every directive is a string, so helmet sets the headers and calls back with no error.
    securityHeaders(request.raw, reply.raw, () => done())
  })

  if (config.corsOrigins.length > 0) {
    const { default: cors } = await import('@fastify/cors')
    await app.register(cors, {
      origin: [...config.corsOrigins],
      methods: [...operationMethods],
      allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
      exposedHeaders: ['x-request-id', 'retry-after', 'www-authenticate'],
      maxAge: 600,
    })
  }

  // Samples in the first two intervals after ready may measure start-up, not overload.
  let readyAt = Number.POSITIVE_INFINITY
  app.addHook('onReady', async () => {
    readyAt = performance.now()
  })
  await app.register(underPressure, {
    maxEventLoopDelay: config.loadShedMaxEventLoopDelayMs,
    maxHeapUsedBytes: config.loadShedMaxHeapBytes,
    sampleInterval: SAMPLE_INTERVAL_MS,
    pressureHandler: (_request, _reply, type) => {
      if (type === TYPE_EVENT_LOOP_DELAY && performance.now() < readyAt + 2 * SAMPLE_INTERVAL_MS) return
      return Promise.reject(new ServiceUnavailableError(OVERLOADED))
    },
  })

  if (config.rateLimitMax === 0 && config.authFailureLimitMax === 0) {
    app.decorate('limits', { limitToken: undefined, countFailedAuthentication: undefined })
    return
  }
  const redis =
    config.rateLimitRedisUrl === undefined
      ? undefined
      : new (await import('ioredis')).Redis(config.rateLimitRedisUrl, {
          lazyConnect: true,
          maxRetriesPerRequest: 1,
          connectTimeout: 1000,
        })
  if (redis !== undefined) {
    app.addHook('onClose', async () => void redis.disconnect())
    // Logged once per outage, not per reconnection attempt; ioredis prints each error without a listener.
    let down = false
    redis.on('error', (error: Error) => {
      if (!down)
        app.log.warn({ err: error }, 'Redis of the rate limits is unreachable; the limits are off until it is back')
      down = true
    })
    /* c8 ignore next 3 -- a Redis that comes back: test/services/redis.test.ts */
    redis.on('ready', () => {
      down = false
    })
  }
  await app.register(rateLimit, {
    global: false,
    // A segmented LRU keeps known offenders through a flood of new addresses.
    ...(redis === undefined ? { store: SegmentedStore } : { redis, nameSpace: 'plant-store-rate-limit:' }),
    // Fail open: serve rather than refuse everyone when Redis is unreachable.
    skipOnError: true,
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
  })
  app.decorate('limits', {
    limitToken: config.rateLimitMax === 0 ? undefined : tokenLimit(app, config),
    countFailedAuthentication:
      config.authFailureLimitMax === 0
        ? undefined
        : failureLimit(
            app.createRateLimit({
              max: config.authFailureLimitMax,
              timeWindow: config.authFailureLimitWindowMs,
              keyGenerator: addressKey,
            }),
          ),
  })
}

export default fp(protection, { name: 'protection' })

function tokenLimit(app: FastifyInstance, config: ProtectionConfig): NonNullable<RouteLimits['limitToken']> {
  const limit = app.rateLimit({
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindowMs,
    keyGenerator: tokenKey,
  })
  return async (request, reply) => {
    await limit.call(app, request, reply)
  }
}

function failureLimit(
  limiter: ReturnType<FastifyInstance['createRateLimit']>,
): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const counted = await limiter(request)
    if (counted.isAllowed || !counted.isExceeded) return
    const seconds = Math.max(1, counted.ttlInSeconds)
    throw new HttpError(429, `Too many failed authentications from this address; retry in ${seconds} seconds`, {
      'retry-after': String(seconds),
    })
  }
}

/** ISPs give a subscriber a /56 or a /48 (RFC 6177, RIPE-690): a /64 key would give one 256 budgets. */
const IPV6_PREFIX = 56

function addressKey(request: FastifyRequest): string {
  return `auth-failure:${normalizeIP(clientAddress(request), IPV6_PREFIX)}`
}

const tokenKeys = new Map<string, string>()

/** The token's hash, so no token is kept in Redis; memoised, as only configured tokens get here (after bearerAuth). */
function tokenKey(request: FastifyRequest): string {
  const token = String(request.headers.authorization).slice('bearer '.length).trim()
  let key = tokenKeys.get(token)
  if (key === undefined) tokenKeys.set(token, (key = createHash('sha256').update(token).digest('base64url')))
  return key
}
