# One image for both Sluice processes; docker-compose.yml picks the command.
FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client mercurial ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY tsconfig.json ./
COPY src ./src
USER node
CMD ["npx", "tsx", "src/api/main.ts"]
