# syntax=docker/dockerfile:1
# The Keel worker image: `docker build -t keel-worker .` (docker-compose.yml builds it).
# Stage 1 installs the production dependencies from the lock file; stage 2 is the runtime:
# the same Node 20 base, those node_modules, the TypeScript sources (tsx runs them as they
# are; the worker bundles workflows/ for the workflow sandbox when it starts), and a
# non-root user. Debian (glibc), not Alpine: the lock file's native packages (the Temporal
# core bridge, @swc/core, esbuild) are the glibc builds.

ARG NODE_IMAGE=node:20.19.5-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json .npmrc ./
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
    KEEL_STORE_DIR=/var/lib/keel/store
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json package-lock.json tsconfig.json ./
COPY --chown=root:root machines ./machines
COPY --chown=root:root workflows ./workflows
COPY --chown=root:root activities ./activities
COPY --chown=root:root worker ./worker
# The code stays owned by root and read-only to the worker; only the workspace and the
# conversation store are writable. Creating them here gives named volumes this ownership.
RUN mkdir -p /workspace /var/lib/keel/store \
 && chown -R node:node /workspace /var/lib/keel
USER node
VOLUME ["/workspace", "/var/lib/keel/store"]

# Healthy when the Temporal frontend answers and a worker in this container polls the
# task queue (worker/healthcheck.ts). The start period covers bundling the workflows.
HEALTHCHECK --interval=30s --timeout=15s --start-period=60s --retries=3 \
  CMD ["node", "--import", "tsx", "worker/healthcheck.ts"]

# `npm run worker` without npm in between, so SIGTERM reaches the worker and it shuts
# down cleanly (stops polling, cancels its running activities, closes MCP servers).
CMD ["node", "--import", "tsx", "worker/main.ts"]
