/**
 * Third-party protections: security headers (helmet), CORS, per-token rate
 * limiting and the failed-authentication limit per client address
 * (@fastify/rate-limit), load shedding (under-pressure).
 *
 * @module
 */
import { createHash } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import cors from '@fastify/cors'
import rateLimit, { normalizeIP } from '@fastify/rate-limit'
import underPressure, { TYPE_EVENT_LOOP_DELAY } from '@fastify/under-pressure'
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import helmet from 'helmet'
import { clientAddress } from './client-address.js'
import type { Config } from './config.js'
import { HttpError, ServiceUnavailableError } from './errors.js'
import { SegmentedStore } from './segmented-store.js'

/**
 * Security headers of JSON API responses (OWASP REST Security Cheat Sheet, "Security
 * headers"): no MIME sniffing, never framed, not cached, HTTPS only. Fixed values,
 * set with one call; helmet's HTML-page headers (CSP for scripts, COOP/CORP, …)
 * protect pages, which these responses are not.
 */
const API_SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
} as const

/** Settings of the protections. */
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

/**
 * The limits the contract's routes apply around authentication (`operation-routes.ts`).
 * Both answer 429 with `Retry-After` (RFC 6585 §4) and the `Error` body; both are
 * counted in one store, shared by replicas through Redis when configured.
 */
export interface RouteLimits {
  /**
   * Per-token rate limit, run after a successful authentication: every token has
   * its own budget. `undefined` when off (`RATE_LIMIT_MAX=0`).
   */
  readonly limitToken: onRequestAsyncHookHandler | undefined
  /**
   * Counts one failed authentication against the request's client address
   * (`clientAddress`: the address the gateway forwards when `TRUST_PROXY` trusts it,
   * else the socket's). Only failures are counted and only failures are refused,
   * so a request with a valid token is never refused by it, whoever else fails
   * from the same address. `undefined` when off (`AUTH_FAILURE_LIMIT_MAX=0`).
   *
   * @throws {HttpError} 429 with `Retry-After` once the address is past its budget
   *   for the window; resolves (the caller answers 401) while it is not.
   */
  readonly countFailedAuthentication: ((request: FastifyRequest) => Promise<void>) | undefined
}

/** Message of a 503 of load shedding. */
const OVERLOADED = 'The service is overloaded; retry later'

/** How often under-pressure samples the event-loop delay, in milliseconds (its default). */
const SAMPLE_INTERVAL_MS = 1000

/**
 * Registers helmet's security headers, CORS (only when origins are configured) and
 * under-pressure, and prepares the rate limits.
 *
 * @param operationMethods - the methods CORS allows: the contract's (`operationMethods`).
 * @returns the limits to apply around authentication on the contract's routes.
 */
export async function registerProtection(app: FastifyInstance, config: ProtectionConfig, operationMethods: readonly string[]): Promise<RouteLimits> {
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
  app.addHook('onRequest', function addSecurityHeaders(request, reply, done) {
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
      methods: [...operationMethods],
      allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
      exposedHeaders: ['x-request-id', 'retry-after', 'www-authenticate'],
      maxAge: 600,
    })
  }

  // under-pressure samples the event loop from its registration on: the sample that
  // covers a start-up stall (route and schema building on a slow machine) reads high,
  // or infinite when the stall outlasted the interval. A sample read in the first two
  // intervals after ready may still cover start-up, not traffic: it is not read as
  // overload.
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

  if (config.rateLimitMax === 0 && config.authFailureLimitMax === 0) return { limitToken: undefined, countFailedAuthentication: undefined }
  // ioredis is loaded only when configured (it costs start-up time and memory).
  const redis =
    config.rateLimitRedisUrl === undefined
      ? undefined
      : new (await import('ioredis')).Redis(config.rateLimitRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000 })
  if (redis !== undefined) app.addHook('onClose', async () => void redis.disconnect())
  await app.register(rateLimit, {
    global: false,
    // Redis expires each key with its window; in process, a segmented LRU bounds the
    // keys and keeps known offenders through a flood of new addresses.
    ...(redis === undefined ? { store: SegmentedStore } : { redis, nameSpace: 'plant-store-rate-limit:' }),
    // If Redis is unreachable, serve rather than refuse everyone (fail open).
    skipOnError: true,
    // The budget is told on 429 (with Retry-After), not on every success: three
    // headers fewer on the hot path.
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
  })
  return {
    limitToken: config.rateLimitMax === 0 ? undefined : named('limitToken', app.rateLimit({ max: config.rateLimitMax, timeWindow: config.rateLimitWindowMs, keyGenerator: tokenKey })),
    countFailedAuthentication:
      config.authFailureLimitMax === 0
        ? undefined
        : failureLimit(app.createRateLimit({ max: config.authFailureLimitMax, timeWindow: config.authFailureLimitWindowMs, keyGenerator: addressKey })),
  }
}

/** `hook`, named as the request path's hook list (app.ts) and `printRoutes` call it. */
function named<Hook extends (...args: never[]) => unknown>(name: string, hook: Hook): Hook {
  return Object.defineProperty(hook, 'name', { value: name })
}

/**
 * {@link RouteLimits.countFailedAuthentication} on a limiter of @fastify/rate-limit:
 * each call counts one failure of the request's address.
 */
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
 * IPv6 clients are counted by /56 network: ISPs give a subscriber a /56 or a /48
 * (RFC 6177, RIPE-690), so a /64 key would give one subscriber 256 budgets or more.
 * A /56 is the usual residential site; a /48 still gets 256 (not 65,536).
 */
const IPV6_PREFIX = 56

/**
 * Failed-authentication key: the client address ({@link clientAddress}), IPv6 by
 * {@link IPV6_PREFIX} network, apart from the token keys.
 */
function addressKey(request: FastifyRequest): string {
  return `auth-failure:${normalizeIP(clientAddress(request), IPV6_PREFIX)}`
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
