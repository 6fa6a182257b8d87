# syntax=docker/dockerfile:1
# The Keel worker image: `docker build -t keel-worker .` (docker-compose.yml builds it). It
# also runs the console and API (`node dist/server/serve.js`, the compose service `console`).
# Stage `build` installs every dependency and runs `npm run build`: the worker compiled to
# plain JavaScript (dist/worker/) and the workflow bundle prebuilt (dist/workflow-bundle.js),
# as Temporal's production sample does. Stage `deps` installs the production dependencies
# only. The runtime stage is the same Node 20 base with those node_modules, dist/ and a
# non-root user: no TypeScript loader and no bundling at start. Debian (glibc), not Alpine:
# the lock file's native packages (the Temporal core bridge) are the glibc builds.

ARG NODE_IMAGE=node:20.19.5-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# The npm workspaces (packages/*) the lock file names: npm ci needs their manifests.
COPY packages/client/package.json ./packages/client/
COPY packages/react/package.json ./packages/react/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY machines ./machines
COPY shared ./shared
COPY workflows ./workflows
COPY activities ./activities
COPY worker ./worker
# The console and API server (dist/server/serve.js, the compose service `console`) and the
# console's page, compiled by the same build.
COPY client ./client
COPY server ./server
# The console imports its stream reader and run reducer from @keel/react's sources.
COPY packages/react/src ./packages/react/src
COPY scripts/build.ts scripts/esbuild-plugins.ts ./scripts/
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json .npmrc ./
COPY packages/client/package.json ./packages/client/
COPY packages/react/package.json ./packages/react/
# --ignore-scripts: no install script is needed (native packages ship prebuilt binaries
# as optional dependencies), matching package.json's allowScripts.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
# bubblewrap: run_command's sandbox (activities/tools/sandbox.ts). It also needs user
# namespaces at run time: see security_opt in docker-compose.yml.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    KEEL_STORE_DIR=/var/lib/keel/store \
    KEEL_SHUTDOWN_GRACE=30s
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
# The code stays owned by root and read-only to the worker; only the workspace and the
# conversation store are writable. Creating them here gives named volumes this ownership.
RUN mkdir -p /workspace /var/lib/keel/store \
 && chown -R node:node /workspace /var/lib/keel
USER node
VOLUME ["/workspace", "/var/lib/keel/store"]

# Healthy when the Temporal frontend answers and a worker in this container polls the
# task queue (worker/healthcheck.ts).
HEALTHCHECK --interval=30s --timeout=15s --start-period=30s --retries=3 \
  CMD ["node", "dist/worker/healthcheck.js"]

# `npm start` without npm in between, so SIGTERM reaches the worker: it stops polling,
# lets running activities finish for KEEL_SHUTDOWN_GRACE, cancels the rest (they retry on
# another replica), closes its MCP servers and exits.
CMD ["node", "dist/worker/main.js"]
