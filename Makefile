# fluence: common tasks. `make test` is what CI runs (.ci/run).
GO      ?= go
# Fuzz budgets are input counts, each about 5 s on a 2-core machine: a
# duration (-fuzztime 10s) races Go 1.26's fuzz coordinator at its deadline
# and fails with "context deadline exceeded" and no crasher (golang/go#75804,
# fixed in Go 1.27). FUZZTIME=60s (or 1000000x) overrides every target.
FUZZTIME ?=

.PHONY: all build test unit integration fuzz vet bench bench-engine bench-scheduler bench-scheduler-5k demo sim image clean

# The image's version, name and creation time (`make image`). The creation
# time is the last commit's (or SOURCE_DATE_EPOCH), so building the same
# commit again gives the same digests.
VERSION           ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION          ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE             ?= ghcr.io/fluence-sched/fluence:$(VERSION)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

all: build test

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

# The integration suite (a real kube-apiserver and etcd, about 5 minutes)
# runs on its own, after the other packages: its checks are on order, not
# time, but its workloads run in real time, and on a 2-core machine the
# other packages' tests would share its CPUs.
# internal/image's TestImage compiles fluence for two platforms: with a cold
# build cache that alone takes about 7 minutes of two idle cores, past
# go test's default 10-minute limit once other packages share them.
unit:
	$(GO) test -timeout 30m $$($(GO) list ./... | grep -v /test/integration)

integration:
	$(GO) test -timeout 30m ./test/integration

# Each fuzz target runs briefly; the seed corpora also run in `unit`.
fuzz:
	$(GO) test ./pkg/jobspec -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),50000x)
	$(GO) test ./pkg/resource -run '^$$' -fuzz '^FuzzParseJGF$$' -fuzztime $(or $(FUZZTIME),60000x)
	$(GO) test ./pkg/resource -run '^$$' -fuzz '^FuzzGenerate$$' -fuzztime $(or $(FUZZTIME),100000x)
	$(GO) test ./pkg/planner -run '^$$' -fuzz '^FuzzPlannerOps$$' -fuzztime $(or $(FUZZTIME),15000x)
	$(GO) test ./internal/matchcli -run '^$$' -fuzz '^FuzzExec$$' -fuzztime $(or $(FUZZTIME),20000x)
	$(GO) test ./pkg/gang -run '^$$' -fuzz '^FuzzCore$$' -fuzztime $(or $(FUZZTIME),50000x)

test: vet unit integration fuzz

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

# One table of engine figures at N = 128, 2,048 and 16,384 nodes.
bench-engine:
	$(GO) run ./cmd/fluence bench-engine

# Pods bound per second on 1,000 simulated nodes, fluence against the stock
# kube-scheduler in the same run (about 3 minutes on 2 cores), with no client
# rate limit. The environment changes it (test/integration/throughput_bench_test.go):
# FLUENCE_BENCH_NODES, FLUENCE_BENCH_PODS (size), FLUENCE_BENCH_QPS (a client
# rate limit), FLUENCE_BENCH_FAULTS=0.1 (fail 10% of Binding calls: 500s, 409s,
# lost responses, timeouts; every group must still bind whole),
# FLUENCE_BENCH_FEATURE_GATES (kube-scheduler feature gates for both).
bench-scheduler:
	$(GO) test ./test/integration -run '^$$' -bench BenchmarkSchedulingThroughput -benchtime 1x -timeout 60m

# The same on 5,000 nodes (not in CI; 10,000 pods unless FLUENCE_BENCH_PODS says otherwise).
bench-scheduler-5k:
	FLUENCE_BENCH_NODES=5000 $(GO) test ./test/integration -run '^$$' -bench BenchmarkSchedulingThroughput -benchtime 1x -timeout 120m

# Topology-constrained gangs (v1beta1 PodGroups kept within one rack or block),
# one at a time on 1,000 simulated nodes, fluence against kube-scheduler 1.37's
# own TopologyAwareWorkloadScheduling in the same run (about 5 minutes on 2 cores):
# groups placed, within one domain, placed of those that fit, wall and decision
# time per group (test/integration/topology_bench_test.go, which lists the
# FLUENCE_BENCH_* settings). bench-topology-5k: 5,000 nodes, 150 groups unless
# FLUENCE_BENCH_GROUPS says otherwise (7 to 17 minutes).
.PHONY: bench-topology bench-topology-5k
bench-topology:
	$(GO) test ./test/integration -run '^$$' -bench BenchmarkTopologyPlacement -benchtime 1x -timeout 60m

bench-topology-5k:
	FLUENCE_BENCH_NODES=5000 FLUENCE_BENCH_GROUPS=$(or $(FLUENCE_BENCH_GROUPS),150) $(GO) test ./test/integration -run '^$$' -bench BenchmarkTopologyPlacement -benchtime 1x -timeout 120m

demo:
	$(GO) run ./cmd/fluence demo

sim:
	$(GO) run ./cmd/fluence sim

# The image for linux/amd64 and linux/arm64, without Docker or any daemon
# (cmd/fluence-image): into _output/image, an OCI layout (oci/), the same as
# one OCI archive (fluence.tar) and a docker-archive per platform
# (fluence-linux-ARCH.docker.tar). docs/install.md says which tool takes which.
image:
	$(GO) run ./cmd/fluence-image --out _output/image --image $(IMAGE) --version $(VERSION) --revision "$(REVISION)" --created $(SOURCE_DATE_EPOCH)

clean:
	$(GO) clean -testcache
	rm -rf _output
