/** The settings' JSON Schema; no imports, so scripts load it from its source. @module */
export interface SettingSchema {
  readonly type: 'string' | 'integer' | 'boolean'
  readonly enum?: readonly string[]
  readonly default?: string | number | boolean
  readonly minimum?: number
  readonly maximum?: number
  readonly minLength?: number
  readonly pattern?: string
  readonly description: string
}

/** One environment variable each; docs/configuration.md is generated from it (`npm run generate:config-docs`). */
export const settingsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    NODE_ENV: {
      type: 'string',
      enum: ['development', 'production', 'test'],
      default: 'development',
      description: '`production` refuses to start without a token.',
    },
    HOST: {
      type: 'string',
      minLength: 1,
      default: '127.0.0.1',
      description: 'Interface to listen on (`0.0.0.0` in the container).',
    },
    PORT: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      default: 3000,
      description: 'TCP port; `0` picks a free one.',
    },
    DATA_DIR: {
      type: 'string',
      minLength: 1,
      default: 'data',
      description:
        'Directory of the embedded store (`plants.sqlite3`); the service must be able to write it, ' +
        'or the start stops naming `DATA_DIR` and the reason.',
    },
    PLANT_STORE_TOKENS: {
      type: 'string',
      default: '',
      description:
        'Accepted bearer tokens, comma-separated (several, for rotation). ' +
        'Each at least 32 characters of `A-Z a-z 0-9 - . _ ~ + /`, then any `=` (RFC 6750 §2.1), ' +
        'at least 8 different, no 8 in a row that repeat or count (`abcdefgh`) and no 8 that appear twice: ' +
        '128 bits or more when random (`openssl rand -base64 32`).',
    },
    PLANT_STORE_TOKENS_FILE: {
      type: 'string',
      minLength: 1,
      description:
        'A file with more tokens (separated by commas or white space), e.g. a container secret. ' +
        'Both variables may be used.',
    },
    BODY_LIMIT: {
      type: 'integer',
      minimum: 256,
      maximum: 16777216,
      default: 65536,
      description: 'Largest request body in bytes; larger is 413.',
    },
    LOG_LEVEL: {
      type: 'string',
      enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
      description: '`fatal` … `trace`, or `silent`.',
    },
    SHUTDOWN_GRACE_MS: {
      type: 'integer',
      minimum: 0,
      maximum: 600000,
      default: 10000,
      description: 'After SIGTERM/SIGINT, time for in-flight requests before the process exits anyway.',
    },
    SHUTDOWN_DRAIN_DELAY_MS: {
      type: 'integer',
      minimum: 0,
      maximum: 600000,
      default: 0,
      description:
        'After SIGTERM, time readiness answers 503 while requests are still served, before the listener closes. ' +
        'Shorter than the grace period.',
    },
    DATABASE_URL: {
      type: 'string',
      pattern: '^postgres(ql)?://',
      description: '`postgres://…`: store in PostgreSQL instead of the embedded store.',
    },
    DATABASE_URL_FILE: {
      type: 'string',
      minLength: 1,
      description: 'A file holding `DATABASE_URL` (container secret).',
    },
    DATABASE_POOL_SIZE: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 10,
      description: 'Most PostgreSQL connections per process.',
    },
    DATABASE_STATEMENT_TIMEOUT_MS: {
      type: 'integer',
      minimum: 1,
      maximum: 3600000,
      default: 5000,
      description:
        'PostgreSQL cancels a statement after this, and the service stops waiting 500 ms later if the server cannot ' +
        'answer (a network partition); the request gets 503.',
    },
    DATABASE_CONNECT_TIMEOUT_MS: {
      type: 'integer',
      minimum: 1,
      maximum: 600000,
      default: 2000,
      description: 'Wait for a connection (new, or free in a full pool); then 503.',
    },
    MIGRATE_ON_START: {
      type: 'boolean',
      default: true,
      description: 'Apply pending migrations at start-up; with `false`, run `npm run migrate`.',
    },
    GROUP_COMMIT_MAX_BATCH: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 100,
      description:
        'Most creates written in one transaction (see [performance](operations.md#performance)); ' +
        '`1` writes each alone.',
    },
    TRUST_PROXY: {
      type: 'string',
      default: 'false',
      description:
        'Believe `X-Forwarded-*` from these hops: comma-separated gateway addresses/CIDRs, ' +
        'or `true` (every hop; refused in production).',
    },
    RATE_LIMIT_MAX: {
      type: 'integer',
      minimum: 0,
      default: 6000,
      description: 'Requests per window per token; `0` turns rate limiting off.',
    },
    RATE_LIMIT_WINDOW_MS: {
      type: 'integer',
      minimum: 1000,
      maximum: 86400000,
      default: 60000,
      description: 'Rate-limit window.',
    },
    RATE_LIMIT_REDIS_URL: {
      type: 'string',
      pattern: '^rediss?://',
      description:
        '`redis://…`: replicas share one budget per token. If Redis is unreachable, requests are served (fail open).',
    },
    AUTH_FAILURE_LIMIT_MAX: {
      type: 'integer',
      minimum: 0,
      default: 20,
      description:
        "Failed authentications per window per client address (see `TRUST_PROXY`; IPv6 per /56, a subscriber's " +
        'usual allocation); past it, failures are 429. A valid token is never refused for them. `0` off.',
    },
    AUTH_FAILURE_LIMIT_WINDOW_MS: {
      type: 'integer',
      minimum: 1000,
      maximum: 86400000,
      default: 60000,
      description: 'Failed-authentication window.',
    },
    LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: {
      type: 'integer',
      minimum: 0,
      default: 1000,
      description:
        'Mean event-loop delay above which requests get 503; `0` off. ' +
        'Read from two seconds after ready: a slow start is not overload.',
    },
    LOAD_SHED_MAX_HEAP_BYTES: {
      type: 'integer',
      minimum: 0,
      default: 0,
      description: 'Heap use above which requests get 503; `0` off.',
    },
    CORS_ORIGINS: {
      type: 'string',
      default: '',
      description: 'Origins allowed by CORS, comma-separated; empty sends no CORS headers.',
    },
    MAX_CONNECTIONS: {
      type: 'integer',
      minimum: 0,
      maximum: 1000000,
      default: 0,
      description:
        'Most open client connections; more are closed at once. `0`: 10,000 (about 14 KB each when idle), or the ' +
        'open-file limit less 128 (kept for the store, logs and the pool) if lower.',
    },
    KEEP_ALIVE_TIMEOUT_MS: {
      type: 'integer',
      minimum: 1,
      maximum: 3600000,
      default: 72000,
      description: "Idle keep-alive lifetime; keep it above the gateway's.",
    },
    REQUEST_TIMEOUT_MS: {
      type: 'integer',
      minimum: 0,
      maximum: 3600000,
      default: 30000,
      description: 'Most time to receive a whole request; `0` off.',
    },
    HEADERS_TIMEOUT_MS: {
      type: 'integer',
      minimum: 1,
      maximum: 3600000,
      default: 10000,
      description: 'Most time to receive the request headers.',
    },
    CONNECTION_TIMEOUT_MS: {
      type: 'integer',
      minimum: 0,
      maximum: 3600000,
      default: 0,
      description: 'Socket inactivity timeout; `0` off.',
    },
    OTEL_EXPORTER_OTLP_ENDPOINT: {
      type: 'string',
      pattern: '^https?://',
      description:
        'OpenTelemetry collector (`http://…:4318`): traces are exported to it over OTLP/HTTP (see ' +
        '[tracing](operations.md#tracing)). Unset: no tracing.',
    },
  },
} as const satisfies { type: 'object'; additionalProperties: false; properties: Record<string, SettingSchema> }
