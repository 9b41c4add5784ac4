# gpuwatch's front door. `make help` lists the targets.

GO        ?= go
BIN       ?= bin/gpuwatch
# The node agent alone (build tag agentonly): what GPU nodes run.
AGENT_BIN ?= bin/gpuwatch-agent
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
# cgo: go-nvml wraps NVML functions that NVIDIA has marked deprecated; the warnings are noise.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages whose tests keep golden files in testdata/ and accept -update.
GOLDEN_PKGS := ./telemetry/ ./collector/agent/ ./scheduler/fairshare/ ./scheduler/topology/
# The demo's simulated length and speed: 10 simulated minutes at 20x take about 30 s of wall time.
DEMO_FLAGS ?= --duration 10m --speed 20
# `make bench` runs the simulated agent as a real process for this long, scraping it
# and receiving its remote write as production does, and fails (last, after every
# other benchmark) when the agent alone, without the simulated hardware, misses
# issue 12's goals: 0.5% of one core, 30 MiB. 120 s, not 60: the CPU split comes
# from a profile sampled at 100 Hz, where the agent is about 15 samples a minute;
# 120 s measures it to ±0.05% of a core (one standard deviation), 60 s to ±0.08%.
AGENTBENCH_FLAGS ?= -duration 120s -scrape 15s -remote-write
# `make bench-store` sizes: the side-by-side ingest run, the paced 1,000-node
# run, the disk-per-sample run and the dashboard queries over a day of data.
STOREBENCH_INGEST_FLAGS ?= -nodes 1000 -cycles 6
STOREBENCH_SUSTAIN_FLAGS ?= -nodes 1000 -duration 60s
STOREBENCH_DISK_FLAGS ?= -nodes 20 -hours 8
STOREBENCH_QUERY_FLAGS ?= -nodes 1000 -hours 24
# `make bench`'s soak: 1,000 simulated nodes, one real agent each, against a real
# server for 30 minutes (plus a 3-minute warm-up); see docs/BENCHMARKS.md, "Soak".
SOAK_FLAGS ?= -nodes 1000 -duration 30m

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## install what the build needs (Go modules)
	@command -v $(GO) >/dev/null || { echo "make: Go is not installed; install Go 1.26 first" >&2; exit 1; }
	$(GO) mod download

# The real servers the tests start on loopback: VictoriaMetrics and Prometheus (with
# promtool), Alertmanager (with amtool), and Slurm (slurm-wlm: slurmctld, slurmd, the
# client commands) with munge, Chromium for the browser tests, and Node.js to load
# the Grafana data source's module.js, from Debian. Installed once; their system services are
# not used (test/realslurm runs its own munged and daemons).
DEBIAN_PACKAGES := victoria-metrics prometheus prometheus-alertmanager slurm-wlm munge chromium nodejs
DEBIAN_BINARIES := victoria-metrics vmalert prometheus promtool prometheus-alertmanager amtool slurmctld slurmd sbatch scontrol sinfo squeue sprio scancel munged chromium node

.PHONY: test-deps
test-deps: deps ## install the Debian packages the tests need (apt-get, as root)
	@missing=; for b in $(DEBIAN_BINARIES); do command -v $$b >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "make: the tests need $(DEBIAN_PACKAGES); run 'sudo make test-deps'" >&2; exit 1; fi; \
	  echo "installing $(DEBIAN_PACKAGES)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEBIAN_PACKAGES) >/dev/null; \
	  for s in victoria-metrics prometheus prometheus-alertmanager slurmctld slurmd; do systemctl stop $$s 2>/dev/null || true; done; \
	fi

.PHONY: build
build: deps ## build bin/gpuwatch (everything) and bin/gpuwatch-agent (the node agent alone)
	CGO_ENABLED=1 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/gpuwatch
	CGO_ENABLED=1 $(GO) build -tags agentonly -ldflags "$(LDFLAGS)" -o $(AGENT_BIN) ./cmd/gpuwatch

# The Grafana data source (datasource/, its own Go module): the directory
# Grafana loads, built into GRAFANA_DIST; GRAFANA_PLUGIN_ARCHES adds backends for
# other platforms (linux/arm64, darwin/arm64…), named gpx_gpuwatch_<os>_<arch>
# as Grafana looks for them.
GRAFANA_DIST ?= dist
GRAFANA_PLUGIN_ARCHES ?= linux/amd64
GRAFANA_PLUGIN_VERSION ?= $(patsubst v%,%,$(VERSION))

.PHONY: grafana-plugin
grafana-plugin: ## build the Grafana data source into dist/ (plugin.json, module.js, README, the gpx_gpuwatch backend)
	@test -n "$(GRAFANA_DIST)" || { echo "make: GRAFANA_DIST is empty" >&2; exit 1; }
	mkdir -p $(GRAFANA_DIST)/img
	rm -f $(GRAFANA_DIST)/gpx_gpuwatch_*
	sed -e 's/%VERSION%/$(GRAFANA_PLUGIN_VERSION)/' -e "s/%TODAY%/$$(date -u +%Y-%m-%d)/" datasource/plugin/plugin.json > $(GRAFANA_DIST)/plugin.json
	cp datasource/plugin/module.js datasource/plugin/README.md $(GRAFANA_DIST)/
	cp datasource/plugin/img/logo.svg $(GRAFANA_DIST)/img/
	@for p in $(GRAFANA_PLUGIN_ARCHES); do os=$${p%/*}; arch=$${p#*/}; \
	  echo "build gpx_gpuwatch_$${os}_$${arch}"; \
	  (cd datasource && CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w" \
	    -o $(abspath $(GRAFANA_DIST))/gpx_gpuwatch_$${os}_$${arch} ./cmd/gpx_gpuwatch) || exit 1; \
	done

.PHONY: demo
demo: build ## run the whole system on a simulated fleet (embedded defaults)
	./$(BIN) demo $(DEMO_FLAGS)

.PHONY: test
test: test-deps lint ## install what is needed, then run every test
	GPUWATCH_REQUIRE_REALSTORE=1 GPUWATCH_REQUIRE_REALSLURM=1 GPUWATCH_REQUIRE_BROWSER=1 $(GO) test -count=1 ./...
	$(MAKE) test-k8s
	$(MAKE) test-datasource

# datasource/ is its own Go module (grafana-plugin-sdk-go and its gRPC plugin
# host, Arrow and newer OpenTelemetry stay out of gpuwatch's go.mod): the Grafana
# data source's handlers against a real gpuwatch server, its front end in Node.js,
# and make grafana-plugin's directory with the backend started as Grafana does.
.PHONY: test-datasource
test-datasource: ## the Grafana data source's tests (datasource/)
	cd datasource && $(GO) mod download && GPUWATCH_REQUIRE_NODE=1 $(GO) test -count=1 ./...

# test/k8s is its own Go module (it requires k8s.io/kubernetes, which gpuwatch's
# module must not): a real etcd, kube-apiserver, kube-scheduler and disruption
# controller in the test process, and the Helm chart. Not built with -trimpath
# (the API server's test starter finds its certificates by source path).
.PHONY: test-k8s
test-k8s: ## the Kubernetes tests: real kube-apiserver and kube-scheduler, the Helm chart (test/k8s)
	cd test/k8s && $(GO) mod download && $(GO) test -count=1 -timeout 20m ./...

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l .); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd test/k8s && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...
	cd datasource && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

.PHONY: bench
bench: build bench-store ## run the benchmarks (results and commands go in docs/BENCHMARKS.md)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) run ./internal/agentbench hour
	GPUWATCH_REQUIRE_REALSLURM=1 GPUWATCH_BENCH_DRAIN=100 $(GO) test -count=1 -run '^TestDrainLatency$$' -v ./test/
	$(GO) run ./internal/agentbench process -bin $(AGENT_BIN) $(AGENTBENCH_FLAGS)
	$(GO) run ./internal/soak -bin $(BIN) $(SOAK_FLAGS)
	GPUWATCH_REPORT_BENCH_NODES=8 GPUWATCH_REPORT_BENCH_HOURS=24 nice -n 10 $(GO) test -run '^$$' -bench BenchmarkReport -benchtime 3x -benchmem ./analyzer/report/
	# Issue 16's goal: a week of 1,000 nodes by account through the API, in its own
	# session with the CPU weight set where the scheduler honours it (docs/BENCHMARKS.md).
	setsid -w sh -c 'echo -15 > /proc/self/autogroup; GPUWATCH_REPORT_BENCH_NODES=1000 GPUWATCH_REPORT_BENCH_DAYS=7 exec $(GO) test -run "^$$" -bench BenchmarkReportWeek -benchtime 3x -v -timeout 60m ./internal/server/'

.PHONY: bench-store
bench-store: build test-deps ## the store benchmarks: ingest side by side with Prometheus and VictoriaMetrics, 1,000 nodes paced, disk, queries
	$(GO) run ./internal/storebench series
	$(GO) run ./internal/storebench ingest -bin $(BIN) $(STOREBENCH_INGEST_FLAGS)
	$(GO) run ./internal/storebench sustain -bin $(BIN) $(STOREBENCH_SUSTAIN_FLAGS)
	$(GO) run ./internal/storebench disk $(STOREBENCH_DISK_FLAGS)
	$(GO) run ./internal/storebench query $(STOREBENCH_QUERY_FLAGS)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 10s)
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-10s} $$pkg || exit 1; \
	  done; \
	done
	cd datasource && $(GO) test -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $${FUZZTIME:-10s} .

.PHONY: third-party
third-party: ## rebuild third_party/ (Prometheus's and go-dcgm's packages, less their test helpers) after changing their versions
	./third_party/update.sh

.PHONY: generate
generate: ## regenerate generated code (the Xid catalog, the Grafana dashboards)
	$(GO) generate ./...

.PHONY: update-golden
update-golden: ## rewrite golden files in testdata/ from the current code
	$(GO) test -count=1 $(GOLDEN_PKGS) -update

.PHONY: clean
clean: ## remove build outputs
	rm -rf bin $(GRAFANA_DIST)
