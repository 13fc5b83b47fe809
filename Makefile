# fluence: common tasks. `make test` is what CI runs (.ci/run).
GO      ?= go
# Fuzz budgets are input counts, each about 5 s on a 2-core machine: a
# duration (-fuzztime 10s) races Go 1.26's fuzz coordinator at its deadline
# and fails with "context deadline exceeded" and no crasher (golang/go#75804,
# fixed in Go 1.27). FUZZTIME=60s (or 1000000x) overrides every target.
FUZZTIME ?=
# Each new input that widens coverage is minimised first, for up to 60 s by
# default: FuzzCore's inputs are whole scripts, and eleven of them took its
# 50,000-input run to 347 s, near go test's 10-minute default timeout. 500
# tries per input bound that (a count, for the reason above).
FUZZFLAGS = -fuzzminimizetime 500x -timeout 20m

.PHONY: all build test unit integration neighbours fuzz vet bench bench-engine bench-scheduler bench-scheduler-5k demo sim image clean

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
# internal/image's TestImage compiles the image's scheduler (cmd/fluence-scheduler)
# for two platforms: with a cold
# build cache that alone takes about 7 minutes of two idle cores, past
# go test's default 10-minute limit once other packages share them.
unit:
	$(GO) test -timeout 30m $$($(GO) list ./... | grep -v /test/integration)

# Kueue, the MPI Operator and JobSet (third_party/, modules of their own)
# are compiled first, outside go test's time limit: with an empty build cache
# they take minutes (docs/up.md); the suite's tests then only link them
# (pkg/localcluster keeps the binaries in the user's cache directory).
integration: neighbours
	$(GO) test -timeout 50m ./test/integration

neighbours:
	cd third_party/kueue && GOWORK=off $(GO) build -trimpath -o /dev/null sigs.k8s.io/kueue/cmd/kueue
	cd third_party/mpi-operator && GOWORK=off $(GO) build -trimpath -o /dev/null .
	cd third_party/jobset && GOWORK=off $(GO) build -trimpath -o /dev/null sigs.k8s.io/jobset

# Each fuzz target runs briefly; the seed corpora also run in `unit`.
fuzz:
	$(GO) test ./pkg/jobspec -run '^$$' $(FUZZFLAGS) -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),50000x)
	$(GO) test ./pkg/resource -run '^$$' $(FUZZFLAGS) -fuzz '^FuzzParseJGF$$' -fuzztime $(or $(FUZZTIME),60000x)
	$(GO) test ./pkg/resource -run '^$$' $(FUZZFLAGS) -fuzz '^FuzzGenerate$$' -fuzztime $(or $(FUZZTIME),100000x)
	$(GO) test ./pkg/planner -run '^$$' $(FUZZFLAGS) -fuzz '^FuzzPlannerOps$$' -fuzztime $(or $(FUZZTIME),15000x)
	$(GO) test ./internal/matchcli -run '^$$' $(FUZZFLAGS) -fuzz '^FuzzExec$$' -fuzztime $(or $(FUZZTIME),20000x)
	$(GO) test ./pkg/gang -run '^$$' $(FUZZFLAGS) -fuzz '^FuzzCore$$' -fuzztime $(or $(FUZZTIME),50000x)

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

# The scheduler process's memory and CPU at 1,000, 5,000 and 15,000 simulated
# nodes (docs/install.md, "Sizing"): the fluence binary as a separate process
# with the Helm chart's configuration and arguments, and the same binary with
# only the stock profile, in the same run: RSS and Go heap idle and with the
# pods bound, CPU idle and per 1,000 pods bound (35 minutes on 2 shared cores).
# test/integration/sizing_bench_test.go lists the FLUENCE_SIZING_* settings
# (FLUENCE_SIZING_NODES=1000,5000 for fewer sizes).
.PHONY: bench-sizing
bench-sizing:
	$(GO) test ./test/integration -run '^$$' -bench BenchmarkSchedulerSizing -benchtime 1x -timeout 300m

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

# GPU gangs through DRA on a rack-scale cluster (16 NVLink domains x 18 nodes x 4 GPUs
# in ResourceSlices), one trace of 80 domain-bound gangs under kube-scheduler 1.37's
# workload scheduling with DynamicResources and under fluence, each on a fresh cluster
# (about 10 minutes on 2 cores): makespan, stranded GPUs, gangs whole and inside one
# domain, claims allocated, DynamicResources refusals (test/integration/dra_bench_test.go,
# which lists the FLUENCE_BENCH_* settings; docs/dra.md has a measured run).
.PHONY: bench-dra
bench-dra:
	$(GO) test ./test/integration -run '^$$' -bench BenchmarkDRARackScale -benchtime 1x -timeout 60m

# Kubernetes' own scheduler benchmark harness (scheduler_perf, k8s.io/kubernetes
# v1.37.2) with fluence registered as an out-of-tree plugin: upstream's
# gang-scheduling workloads, read from the module cache, run three ways in one
# run (in-tree GangScheduling as shipped, the stock scheduler on the same pods,
# fluence on the same pods) and printed side by side: pods/s, ms per group,
# heap (test/schedperf, docs/design/009-reference-benchmark.md). Build tag
# schedperf: never part of `make test`. The environment chooses the workloads:
# SCHEDPERF_UPSTREAM (a regexp over upstream's workload names), SCHEDPERF_SHAPES
# (NODESxGROUPSxSIZE[+LONE],...), SCHEDPERF_REPEAT, SCHEDPERF_VARIANTS
# (intree,stock,fluence; fluence-nogate: fluence without its PreEnqueue),
# SCHEDPERF_SETTLE (e.g. 90s: a sleep between creating
# the nodes and the pods, in every variant), SCHEDPERF_REPORT (a file for the
# table); SCHEDPERF_ARGS: the harness's flags (-data-items-dir DIR -perf-cpuprofile).
# bench-schedperf-small: 200 nodes, the plumbing (about 3 minutes).
# bench-schedperf: 5,000 nodes, upstream's three 3-pod-gang workloads, groups
# of 64 and a mix of groups of 8 with lone pods (about an hour on 2 cores,
# mostly the in-tree and stock variants: upstream's three workloads alone took
# 21 minutes, docs/design/009).
# bench-schedperf-8: 5,000 nodes, groups of 8, three times each, stock's and
# fluence's runs alternating.
# bench-schedperf-15k: 15,000 nodes, groups of 3, 8 and 64 and the mix.
SCHEDPERF = $(GO) test -tags schedperf ./test/schedperf -run '^$$' -bench BenchmarkReference -benchtime 1x
.PHONY: bench-schedperf bench-schedperf-small bench-schedperf-8 bench-schedperf-15k
bench-schedperf:
	SCHEDPERF_SHAPES=$${SCHEDPERF_SHAPES-5000x80x64,5000x400x8+4} $(SCHEDPERF) -timeout 180m $(if $(SCHEDPERF_ARGS),-args $(SCHEDPERF_ARGS))

bench-schedperf-small:
	SCHEDPERF_UPSTREAM=none SCHEDPERF_SHAPES=$${SCHEDPERF_SHAPES-200x200x3,200x40x8+4} $(SCHEDPERF) -timeout 30m $(if $(SCHEDPERF_ARGS),-args $(SCHEDPERF_ARGS))

bench-schedperf-8:
	SCHEDPERF_UPSTREAM=none SCHEDPERF_SHAPES=$${SCHEDPERF_SHAPES-5000x625x8} SCHEDPERF_REPEAT=$${SCHEDPERF_REPEAT-3} SCHEDPERF_VARIANTS=$${SCHEDPERF_VARIANTS-stock,fluence} $(SCHEDPERF) -timeout 180m $(if $(SCHEDPERF_ARGS),-args $(SCHEDPERF_ARGS))

bench-schedperf-15k:
	SCHEDPERF_UPSTREAM=none SCHEDPERF_SHAPES=$${SCHEDPERF_SHAPES-15000x1000x3,15000x625x8,15000x80x64,15000x400x8+4} $(SCHEDPERF) -timeout 240m $(if $(SCHEDPERF_ARGS),-args $(SCHEDPERF_ARGS))

# bench-schedperf-upstream: upstream's own preemption and topology-aware
# scheduling test cases (default_preemption's PreemptionPodGroupDisruptionMode,
# podgroup/tas's TopologyAwareScheduling; workload_preemption's by
# SCHEDPERF_CASES), unchanged, run as shipped and with fluence's profile as the
# only one, named default-scheduler (BenchmarkUpstream,
# docs/design/009-reference-benchmark.md). SCHEDPERF_CASES and
# SCHEDPERF_WORKLOADS: regexps over upstream's test case and workload names;
# SCHEDPERF_VARIANTS: intree,fluence,fluence-first. The default is the 2-node
# FastTest_* and 10-node workloads (minutes); the 1,000-node preemption and
# 5,000-node topology workloads of the design doc:
#   SCHEDPERF_WORKLOADS='^(1000Nodes_1000Candidates_.*|5000Nodes_750Gangs_3000Pods|5000Nodes_3Gangs_3000Pods_1000PerGroup)$$'
.PHONY: bench-schedperf-upstream
bench-schedperf-upstream:
	$(GO) test -tags schedperf ./test/schedperf -run '^$$' -bench BenchmarkUpstream -benchtime 1x -timeout 240m $(if $(SCHEDPERF_ARGS),-args $(SCHEDPERF_ARGS))

demo:
	$(GO) run ./cmd/fluence demo

sim:
	$(GO) run ./cmd/fluence sim

# The image for linux/amd64 and linux/arm64, without Docker or any daemon
# (cmd/fluence-image), of cmd/fluence-scheduler, the scheduler without the
# CLI's fluence up and its control plane: into _output/image, an OCI layout (oci/), the same as
# one OCI archive (fluence.tar) and a docker-archive per platform
# (fluence-linux-ARCH.docker.tar). docs/install.md says which tool takes which.
image:
	$(GO) run ./cmd/fluence-image --out _output/image --image $(IMAGE) --version $(VERSION) --revision "$(REVISION)" --created $(SOURCE_DATE_EPOCH)

clean:
	$(GO) clean -testcache
	rm -rf _output

# A release into _output/release (cmd/fluence-release, docs/release.md):
# fluence and kubectl-fluence for linux and darwin, amd64 and arm64,
# fluence-scheduler for linux, the image of it (OCI layout and archive), the chart packaged with the image's digest,
# a CycloneDX SBOM per binary and SHA256SUMS. The version is the VERSION
# file's (VERSION=0.2.0 overrides); every time recorded is the last commit's.
.PHONY: release
release: VERSION = $(shell cat VERSION)
release:
	$(GO) run ./cmd/fluence-release --out _output/release --version $(VERSION) --image $(IMAGE) --revision "$(REVISION)" --created $(SOURCE_DATE_EPOCH)
