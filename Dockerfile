# Sluice's image: the compiled build (npm run build) and production dependencies, for every role.
# The command picks the role (docker-compose.yml does):
#   node dist/api/main.js       HTTP API
#   node dist/worker/main.js    workflows, database, deliveries, chat and e-mail
#   node dist/runner/main.js    checkouts and test files (needs git, ssh, hg, bwrap and crane: installed below)

# ---- crane: the registry client runners pull builds' images with (docs/operating.md, "Images") ----
FROM golang:1.26-bookworm AS crane
RUN go install github.com/google/go-containerregistry/cmd/crane@v0.22.1

# ---- build: all dependencies, TypeScript compiled, workflow code bundled ----
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# ---- run: production dependencies and dist/ only ----
FROM node:20-bookworm-slim
# Runners pull over SSH with git or Mercurial and run every build process in bubblewrap where
# the container allows user namespaces (SLUICE_SANDBOX=auto, the default; the runner refuses to
# start where it does not work unless SLUICE_SANDBOX=none); certificates for HTTPS webhooks,
# chat and SMTP; strace records what each test file reads (affected tests). sluice-build is the
# user a root runner runs builds as.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client mercurial bubblewrap strace ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --no-create-home --shell /usr/sbin/nologin sluice-build
ENV NODE_ENV=production
# The store of caches and artifacts (SLUICE_CACHE_URL in docker-compose.yml): the API and workers
# (node) read and delete what runners (root) write there, which runners give to its owner.
RUN mkdir -p /var/lib/sluice/cache && chown node:node /var/lib/sluice/cache && chmod 0700 /var/lib/sluice/cache
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=crane /go/bin/crane /usr/local/bin/crane
# The API and workers run as node; the runner service runs as root so that it can start tests
# as sluice-build (SLUICE_BUILD_USER, docker-compose.yml), who cannot read the runner.
USER node
CMD ["node", "dist/api/main.js"]
