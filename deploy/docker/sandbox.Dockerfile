# The sandbox base image: what the kubernetes provider's Pods run. It needs /bin/sh, dd, mkdir,
# chmod, mv and cat (the provider's uploads and start script) and carries svc-sidecar (the
# session service uploads its own copy to /usr/local/bin at spawn; this one is for images built
# on top that want it at hand). Built from the repository root:
#   docker build -f deploy/docker/sandbox.Dockerfile -t ghcr.io/svc-dev/svc-sandbox:0.1.0 .
# Agents go in images built FROM this one, e.g. Claude Code:
#   FROM ghcr.io/svc-dev/svc-sandbox:0.1.0
#   USER root
#   RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
#    && npm install -g @anthropic-ai/claude-code && rm -rf /var/lib/apt/lists/*
#   USER 1000

FROM node:20-bookworm-slim AS sidecar
WORKDIR /src
COPY . .
RUN npm ci --no-audit --no-fund && npx nx run @svc/sidecar:executable --outputStyle=static

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1000 agent && useradd --uid 1000 --gid agent --create-home --shell /bin/bash agent \
 && mkdir -p /workspace && chown agent:agent /workspace
COPY --from=sidecar --chmod=0755 /src/sidecar/executable/svc-sidecar /opt/svc/bin/svc-sidecar
USER 1000
WORKDIR /workspace
