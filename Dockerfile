# syntax=docker/dockerfile:1

# The Go version is go.mod's go line: with GOTOOLCHAIN=local the go command
# refuses to fetch a newer toolchain, so an older image could not build.
FROM golang:1.26.8-bookworm AS build
ENV GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/ampflow-hook ./cmd/ampflow-hook
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/ampflow ./cmd/ampflow

# The worker runs git (the SSOT, task branches), so the runtime is a slim
# Debian with git rather than distroless; curl serves the health check;
# bubblewrap sandboxes runner agents (docs/sandbox.md).
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap nftables iproute2 ca-certificates curl git \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 ampflow \
    && useradd --system --uid 10001 --gid ampflow --create-home --home-dir /home/ampflow ampflow \
    && mkdir /data \
    && chown ampflow:ampflow /data
COPY --from=build /out/ampflow /usr/local/bin/ampflow
COPY --from=build /out/ampflow-hook /usr/local/bin/ampflow-hook

USER ampflow
WORKDIR /home/ampflow
ENV AMPFLOW_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 7480
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:7480/healthz"]
ENTRYPOINT ["ampflow"]
CMD ["worker"]
