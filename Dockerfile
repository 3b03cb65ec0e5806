# syntax=docker/dockerfile:1
#
# gateway-reconciler, self-hosted: the fastify server (webhooks, /resync, /healthz, /readyz)
# and the node-cron schedule in one process (lib/main.ts).
#
#   docker build -t gateway-reconciler:0.1.0 .
#   docker run --rm -p 8080:8080 --read-only \
#     -e KUBECONFIG=/kube/config -v ~/.kube/config:/kube/config:ro \
#     -e TYK_URL=http://tyk-gateway:8080 -e TYK_AUTH=... -e WEBHOOK_TOKEN=... -e RESYNC_TOKEN=... \
#     gateway-reconciler:0.1.0
#
# The final stage holds only dist/, the production node_modules and package.json ("type":
# "module" makes Node load dist/**/*.js as ES modules). It starts node directly: `npm start`
# would first run `npm run build` (prestart), which needs TypeScript and writes dist/,
# impossible on the read-only root filesystem the Kubernetes manifests use. npm itself is
# removed from the final image.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile TypeScript, then drop the devDependencies ---------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Dependencies first, so this layer is reused while only the sources change.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# tsconfig.build.json compiles lib/ and functions/ only (into dist/lib, dist/functions).
COPY tsconfig.json tsconfig.build.json ./
COPY lib ./lib
COPY functions ./functions
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime ----------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# Nothing in the final command needs npm, npx or corepack; without them the image has less to
# patch and nothing that could try to write a cache at run time.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
# Owned by root and read-only to the process: the code cannot be changed by the user it runs as,
# even where the root filesystem is not mounted read-only.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# uid/gid 1000 is the "node" user of the official images; numeric so that Kubernetes'
# runAsNonRoot can verify it without a runAsUser of its own.
USER 1000:1000
# PORT defaults to 8080 (lib/config.ts); the Service and the probes use it.
EXPOSE 8080
# SIGTERM (the default stop signal) stops the schedule and finishes requests in flight.
STOPSIGNAL SIGTERM
CMD ["node", "dist/lib/main.js"]
