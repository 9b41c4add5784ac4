# gpuwatch's server image: one static binary on distroless/static, non-root
# (uid 65532). The binary is the same `gpuwatch` command as the agent's; it
# links go-nvml's dlopen stub, which the server never calls, so it is linked
# statically with cgo (glibc's static dlopen warning at link time is expected).
# Build from the repository root:
#
#   docker build -f deploy/docker/server.Dockerfile -t ghcr.io/gpuwatch/gpuwatch-server:$(git describe --tags --always) .
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN go mod download
COPY . .
ARG VERSION=dev
ENV CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
RUN go build -trimpath -tags netgo,osusergo \
      -ldflags "-s -w -X main.version=${VERSION} -linkmode external -extldflags -static" \
      -o /out/gpuwatch ./cmd/gpuwatch

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gpuwatch /usr/bin/gpuwatch
USER 65532:65532
# The store, the drain state and the audit log: a persistent volume in the chart.
VOLUME /data
EXPOSE 9402
ENTRYPOINT ["/usr/bin/gpuwatch"]
CMD ["server", "--listen=:9402", "--data-dir=/data"]
