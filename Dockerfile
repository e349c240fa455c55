# Sideport in a container: the web app, the API and the operator CLI (`sideport worker`, backup).
#
#   docker build -t sideport .
#   docker run -p 8080:8080 -v sideport-data:/data -e SECRET_KEY=... -e BILLING_DEV_ALLOWED=true sideport
#
# The base image is a build argument so that a machine without a registry can build the same file
# from a local copy of it (scripts/container-test.sh).
ARG NODE_IMAGE=node:20

# ---- build: every workspace's dependencies, the TypeScript build, the web app and the agent ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The manifests first: dependencies are fetched again only when one of them changes.
COPY package.json package-lock.json ./
COPY apps/server/package.json apps/server/
COPY apps/web/package.json apps/web/
COPY apps/agent/package.json apps/agent/
COPY packages/contracts/package.json packages/contracts/
COPY packages/ipa/package.json packages/ipa/
COPY e2e/package.json e2e/
# Scripts off: the root postinstall builds, which needs the sources copied below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# Then only what runs stays: production dependencies (some nested under a workspace), each
# workspace's build, the migrations and the agent's example commands.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf apps/*/src packages/*/src e2e bench fixtures scripts .ci

# ---- run: the built app and its runtime dependencies, as the unprivileged `node` user ----
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app /app
# The embedded database and files live in /data, the one folder the app writes.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "apps/server/dist/main.js"]
