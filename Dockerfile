# syntax=docker/dockerfile:1
#
# Plant Store container image.
#
#   docker build -t plant-store .
#   docker run --rm -p 3000:3000 -v plant-store-data:/data \
#     -v "$PWD/secrets/plant_store_tokens:/run/secrets/plant_store_tokens:ro" \
#     -e PLANT_STORE_TOKENS_FILE=/run/secrets/plant_store_tokens plant-store
#
# Configuration is by environment (every variable: docs/configuration.md,
# generated from service/settings.ts).
# Bearer tokens are a secret: mount them as a file and point
# PLANT_STORE_TOKENS_FILE at it (compose.yaml does so with a compose secret at
# /run/secrets/plant_store_tokens); never bake them into the image or an ENV line.
# NODE_ENV=production refuses to start without a token.
#
# Node: the current LTS line (24) on Debian bookworm, slim variant; every stage
# starts from the same tag.
#
# npm ci runs with --ignore-scripts: no install script runs (.npmrc). The one
# native addon the service loads, sqlite3 (node-sqlite3, SQLite included), is
# compiled once in the build stage by `npm run build:sqlite3` (node-gyp: Python,
# make, a C++ compiler, and the headers this Node image ships in /usr/local),
# and only its binary is copied into the production dependencies.
# npm's cache lives in a build cache mount shared by both npm stages, so it is
# downloaded once and never lands in a layer.

# Build: every dependency, sqlite3's binary, then TypeScript and the Kysely bundle to dist/, and openapi.yaml beside it.
FROM node:24-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --ignore-scripts --no-audit --no-fund
RUN npm run build:sqlite3 -- --nodedir=/usr/local
COPY tsconfig.json tsconfig.build.json openapi.yaml ./
COPY service ./service
COPY scripts ./scripts
RUN npm run build

# Production dependencies only, copied into the runtime stage; not the optional ones,
# which are sqlite3's build tool (node-gyp) and pg's driver for Cloudflare Workers.
FROM node:24-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund
COPY --from=build /app/node_modules/sqlite3/build/Release/node_sqlite3.node ./node_modules/sqlite3/build/Release/

FROM node:24-bookworm-slim AS runtime
LABEL org.opencontainers.image.title="plant-store" \
      org.opencontainers.image.description="OpenAPI Plant Store: a contract-first Fastify service for POST /plants" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.base.name="docker.io/library/node:24-bookworm-slim"
# SHUTDOWN_GRACE_MS stays below `docker stop`'s default 10 s, so a slow drain
# ends in the service's own exit rather than in SIGKILL. One glibc malloc arena,
# not one per thread that allocates (V8's compiler threads): less peak RSS under
# load, at no CPU cost the benchmark can show (figures in docs/benchmarks.md).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data \
    SHUTDOWN_GRACE_MS=8000 \
    NODE_COMPILE_CACHE=/tmp/node-compile-cache \
    MALLOC_ARENA_MAX=1
WORKDIR /app
# Application files stay owned by root (read-only to the service); only /data is
# writable by the node user, so the container also runs with a read-only root
# file system. package.json declares "type": "module" for dist/ (without it Node
# would have to guess each file's module format).
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /data \
 && chown node:node /data
USER node
VOLUME /data
EXPOSE 3000
# Liveness probe with node itself (no curl in slim images): GET /health/live.
# The first probe runs one interval after start, long after the service listens
# (it starts in well under a second), so no --start-period is set.
HEALTHCHECK --interval=30s --timeout=5s --retries=3 \
  CMD ["node", "dist/scripts/healthcheck.js"]
# Exec form: node is PID 1 (the base image's entrypoint execs it) and receives
# SIGTERM/SIGINT itself; no npm or shell in between to swallow or delay the
# signal or hide the exit status.
# No init (tini, `docker run --init`) is needed: close-with-grace installs
# SIGTERM/SIGINT handlers, so PID 1's ignore-by-default signal rule does not
# bite, and the service starts no child processes, so there are no zombies to
# reap (health probes are started by the runtime, not by PID 1). `--init`
# remains harmless if an operator prefers it.
# --max-semi-space-size (MiB): V8's young generation grows to 3 × 16 MiB under
# load by default; 8 holds the peak RSS down, and a request's objects still die
# young while its batch is written on libuv's thread pool (at 4 they were
# promoted, and the mark-compacts that followed tripled the p99; figures in
# docs/benchmarks.md). The benchmark starts the service with these same options.
CMD ["node", "--max-semi-space-size=8", "dist/service/server.js"]
