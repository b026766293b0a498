/**
 * Third-party protections: security headers (helmet), CORS, rate limits
 * (@fastify/rate-limit), load shedding (under-pressure).
 * @module
 */
import { createHash } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import rateLimit, { normalizeIP } from '@fastify/rate-limit'
import underPressure, { TYPE_EVENT_LOOP_DELAY } from '@fastify/under-pressure'
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import helmet from 'helmet'
import { clientAddress } from '../client-address.js'
import type { Config } from '../config.js'
import { HttpError, ServiceUnavailableError } from '../errors.js'
import { SegmentedStore } from '../segmented-store.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The limits the operations' authentication applies. */
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

/** The limits around authentication: 429 with `Retry-After` (RFC 6585 §4), shared by replicas through Redis when configured. */
export interface RouteLimits {
  /** Per-token limit, run after a successful authentication; `undefined` when off (`RATE_LIMIT_MAX=0`). */
  readonly limitToken: onRequestAsyncHookHandler | undefined
  /**
   * Counts a failed authentication against the client address; only failures are counted
   * and refused, so a valid token never is. `undefined` when off (`AUTH_FAILURE_LIMIT_MAX=0`).
   * @throws {HttpError} 429 with `Retry-After` once the address is past its budget.
   */
  readonly countFailedAuthentication: ((request: FastifyRequest) => Promise<void>) | undefined
}

const OVERLOADED = 'The service is overloaded; retry later'

/** How often under-pressure samples the event-loop delay, ms (its default). */
const SAMPLE_INTERVAL_MS = 1000

/** Security headers, CORS (when origins are configured), under-pressure, and the rate limits as `app.limits`. */
async function protection(app: FastifyInstance, { operationMethods, ...config }: ProtectionConfig & { operationMethods: readonly string[] }): Promise<void> {
  // helmet's middleware, built once: @fastify/helmet rebuilds it on every request.
  const securityHeaders = helmet({
    // For Swagger UI: its own scripts, inline styles, data: images. No
    // upgrade-insecure-requests: the gateway may reach the service over plain HTTP.
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
    // The operations' JSON answers get the API set; helmet's page headers are for the rest.
    if (request.routeOptions.schema?.operationId !== undefined) {
      reply.headers(API_SECURITY_HEADERS)
      return done()
    }
    securityHeaders(request.raw, reply.raw, (error?: unknown) => done(error as Error | undefined))
  })

  if (config.corsOrigins.length > 0) {
    // Loaded only when configured, as ioredis is below.
    const { default: cors } = await import('@fastify/cors')
    await app.register(cors, {
      origin: [...config.corsOrigins],
      methods: [...operationMethods],
      allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
      exposedHeaders: ['x-request-id', 'retry-after', 'www-authenticate'],
      maxAge: 600,
    })
  }

  // A sample in the first two intervals after ready may cover start-up (route and schema
  // building), not traffic: it is not read as overload.
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
  // ioredis is loaded only when configured (start-up time and memory).
  const redis =
    config.rateLimitRedisUrl === undefined
      ? undefined
      : new (await import('ioredis')).Redis(config.rateLimitRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000 })
  if (redis !== undefined) app.addHook('onClose', async () => void redis.disconnect())
  await app.register(rateLimit, {
    global: false,
    // In process, a segmented LRU keeps known offenders through a flood of new addresses.
    ...(redis === undefined ? { store: SegmentedStore } : { redis, nameSpace: 'plant-store-rate-limit:' }),
    // If Redis is unreachable, serve rather than refuse everyone (fail open).
    skipOnError: true,
    // The budget is told on 429 only: three headers fewer on the hot path.
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
  })
  app.decorate('limits', {
    limitToken: config.rateLimitMax === 0 ? undefined : named('limitToken', app.rateLimit({ max: config.rateLimitMax, timeWindow: config.rateLimitWindowMs, keyGenerator: tokenKey })),
    countFailedAuthentication:
      config.authFailureLimitMax === 0
        ? undefined
        : failureLimit(app.createRateLimit({ max: config.authFailureLimitMax, timeWindow: config.authFailureLimitWindowMs, keyGenerator: addressKey })),
  })
}

export default fp(protection, { name: 'protection' })

/** `hook`, named as `printRoutes` shows it. */
function named<Hook extends (...args: never[]) => unknown>(name: string, hook: Hook): Hook {
  return Object.defineProperty(hook, 'name', { value: name })
}

function failureLimit(limiter: ReturnType<FastifyInstance['createRateLimit']>): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const counted = await limiter(request)
    // (isAllowed is only true for an allow list, which is not configured.)
    if (counted.isAllowed || !counted.isExceeded) return
    const seconds = Math.max(1, counted.ttlInSeconds)
    throw new HttpError(429, `Too many failed authentications from this address; retry in ${seconds} seconds`, { 'retry-after': String(seconds) })
  }
}

/**
 * IPv6 clients are counted by /56: ISPs give a subscriber a /56 or a /48 (RFC 6177, RIPE-690),
 * so a /64 key would give one subscriber 256 budgets or more.
 */
const IPV6_PREFIX = 56

function addressKey(request: FastifyRequest): string {
  return `auth-failure:${normalizeIP(clientAddress(request), IPV6_PREFIX)}`
}

const tokenKeys = new Map<string, string>()

/** Rate-limit key: the token's hash, so no token is kept in Redis; memoised, as only configured tokens get here. */
function tokenKey(request: FastifyRequest): string {
  const token = (request.headers.authorization as string).slice('bearer '.length).trim()
  let key = tokenKeys.get(token)
  if (key === undefined) tokenKeys.set(token, (key = createHash('sha256').update(token).digest('base64url')))
  return key
}
