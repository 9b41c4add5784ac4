# gpuwatch's node agent image: the gpuwatch binary with glibc, so that NVML
# (libnvidia-ml.so.1, which the NVIDIA container runtime mounts from the host
# driver at start) loads through go-nvml's dlopen. Build from the repository root:
#
#   docker build -f deploy/docker/agent.Dockerfile -t ghcr.io/gpuwatch/gpuwatch-agent:$(git describe --tags --always) .
#
# It runs as root: reading /dev/kmsg (Xids) needs CAP_SYSLOG where
# kernel.dmesg_restrict=1, the kubelet's pod-resources socket is root's, and
# NVML event sets on every GPU need the device nodes; the Helm chart runs it
# privileged with a read-only root file system. The agent writes only its state
# directory (/var/lib/gpuwatch, a host path in the chart).
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN go mod download
COPY . .
ARG VERSION=dev
# go-nvml wraps functions NVIDIA marked deprecated: the warnings are noise.
ENV CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gpuwatch ./cmd/gpuwatch

# distroless base: glibc and CA certificates, no shell.
FROM gcr.io/distroless/base-debian12
COPY --from=build /out/gpuwatch /usr/bin/gpuwatch
# NVML and the device nodes come from the NVIDIA container runtime
# (runtimeClassName: nvidia, NVIDIA_DRIVER_CAPABILITIES=utility).
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
EXPOSE 9400
ENTRYPOINT ["/usr/bin/gpuwatch"]
CMD ["agent", "--listen=:9400", "--state-dir=/var/lib/gpuwatch"]
