# syntax=docker/dockerfile:1
# shardmesh: sharddaemon and shardctl in one small image that runs as a non-root user.
#
#   docker build --build-arg VERSION=v1.2.0 -t shardmesh:v1.2.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=v1.2.0 .
#
# The build stage runs scripts/release, the one place the build flags live: static
# binaries (CGO_ENABLED=0), version-stamped. The image has no shell; shardctl is beside the
# daemon (docker exec CONTAINER shardctl members --data-dir /var/lib/shardmesh). It has no
# man either: 'docker run --rm IMAGE man | man -l -' reads sharddaemon(1); the release
# archives carry every page.
# deploy/ has a Kubernetes StatefulSet, a compose file and a systemd unit; see
# docs/operations.md.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
RUN scripts/release -b -v "${VERSION}" -o /out "${TARGETOS}/${TARGETARCH}" \
 && mkdir -p /out/data

# distroless/static: CA certificates, /etc/passwd with the nonroot user (65532), no shell,
# no package manager; the binaries need nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sharddaemon /out/shardctl /usr/local/bin/
# The data directory, owned by the user the daemon runs as (a volume mounted here starts
# with this ownership).
COPY --from=build --chown=65532:65532 /out/data /var/lib/shardmesh
USER 65532:65532
VOLUME ["/var/lib/shardmesh"]
# 4001: the member protocol (libp2p over TCP); 9090: /metrics, /healthz and /readyz.
EXPOSE 4001 9090
ENTRYPOINT ["/usr/local/bin/sharddaemon"]
CMD ["--data-dir", "/var/lib/shardmesh", "--listen", "/ip4/0.0.0.0/tcp/4001", "--metrics-listen", "0.0.0.0:9090"]
