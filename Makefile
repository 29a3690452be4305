# Targets for building, testing and running the RocketMQ operator, broker and name server.
# Everything a target needs is installed through the Go module proxy or Maven Central.

GO ?= go
BIN := $(CURDIR)/bin
GOFLAGS_STATIC := CGO_ENABLED=0
LDFLAGS := -s -w
FUZZTIME ?= 60s
QUICKSTART_DIR ?= $(CURDIR)/.quickstart

.PHONY: all
all: build

##@ Build

.PHONY: build
build: ## Build bin/namesrv, bin/broker, bin/manager and bin/rmqbench as static binaries.
	$(GOFLAGS_STATIC) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

.PHONY: fmt
fmt: ## gofmt the tree.
	$(GO) fmt ./...

.PHONY: vet
vet: ## go vet the tree.
	$(GO) vet ./...

.PHONY: lint
lint: ## golangci-lint (.golangci.yml): vet, staticcheck, errcheck, unused, forbidigo, ... (builds the pinned version once, cached).
	hack/golangci-lint.sh

.PHONY: generate
generate: ## Generate DeepCopy methods for the API types.
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: ## Generate CRDs and RBAC under config/ (and the chart's copy of the CRDs).
	$(GO) tool controller-gen rbac:roleName=manager-role crd webhook paths=./api/... paths=./controllers/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/sync-chart-crds.sh

# The one version (internal/version): image tag, chart appVersion, samples, default pod image.
VERSION ?= $(shell sed -n 's/^const Version = "\(.*\)"/\1/p' internal/version/version.go)
IMAGE ?= openrmq/rocketmq-operator:$(VERSION)

.PHONY: image
image: build ## Assemble the container image as bin/image.tar (docker load -i) without a Docker engine.
	$(GO) run ./hack/ociimage -bin $(BIN) -tag $(IMAGE) -out $(BIN)/image.tar

##@ Test

.PHONY: envtest
envtest: ## Build (once, cached outside the clone) kube-apiserver and etcd for envtest.
	@hack/envtest.sh

.PHONY: test
test: vet ## Run every test: unit, storage, protocol, name server, envtest suites and e2e.
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" $(GO) test -count=1 -timeout 40m ./...

RACE_PKGS ?= ./pkg/remoting/... ./broker/... ./namesrv/...

.PHONY: test-race
test-race: ## The packages with concurrency under the race detector (-short); any race fails.
	$(GO) test -race -short -count=1 -timeout 30m $(RACE_PKGS)

# Zones that move the local hour across the whole day (Etc/GMT+12 is UTC-12).
TZ_ZONES ?= Etc/GMT+12 Etc/GMT+6 UTC Etc/GMT-6 Etc/GMT-14
TZ_PKGS ?= ./broker/store/... ./broker/schedule ./broker/transaction ./broker/lock ./broker/longpoll ./namesrv

.PHONY: test-tz
test-tz: ## The clock-driven packages once in each of TZ_ZONES: no test may depend on the local hour.
	@set -e; for z in $(TZ_ZONES); do echo "== TZ=$$z"; TZ=$$z $(GO) test -short -count=1 $(TZ_PKGS); done

.PHONY: test-compat
test-compat: build ## Compatibility suite against the official Java client and Java broker.
	hack/compat.sh

.PHONY: check-metrics
check-metrics: build ## promtool check metrics on a live name server and broker (builds promtool once, cached).
	hack/check-metrics.sh

.PHONY: test-k8s
test-k8s: ## End-to-end suite on a single-node Kubernetes built here (test/e2e-k8s; root; ~15 min cold).
	hack/test-k8s.sh

.PHONY: fuzz
fuzz: ## Fuzz every network and disk decoder in turn, FUZZTIME each (default 60s); FUZZ=<regexp> picks targets.
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZ='$(FUZZ)' hack/fuzz.sh

.PHONY: bench
bench: ## Run the Go benchmarks (protocol and storage).
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/... ./broker/...

.PHONY: bench-java
bench-java: ## Our broker vs the Java 4.9.7 broker under bin/rmqbench (~5 min; BENCH_CLIENT=java: the official Java client); prints a markdown table.
	hack/bench-vs-java.sh

##@ Run

.PHONY: quickstart
quickstart: build ## Run a name server and a broker on loopback until Ctrl-C.
	hack/quickstart.sh "$(QUICKSTART_DIR)"

.PHONY: cluster-up
cluster-up: ## A single-node Kubernetes v1.37.2 on this machine, from Go modules and Debian packages (root).
	@hack/cluster/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the cluster-up cluster: processes by PID, mounts, bridge, iptables rules.
	@hack/cluster/down.sh

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
