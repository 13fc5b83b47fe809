# fluence: common tasks. `make test` is what CI runs (.ci/run).
GO      ?= go
FUZZTIME ?= 10s

.PHONY: all build test unit fuzz vet bench bench-engine bench-scheduler demo sim clean

all: build test

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

unit:
	$(GO) test ./...

# Each fuzz target runs briefly; the seed corpora also run in `unit`.
fuzz:
	$(GO) test ./pkg/jobspec -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/resource -run '^$$' -fuzz '^FuzzParseJGF$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/resource -run '^$$' -fuzz '^FuzzGenerate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/planner -run '^$$' -fuzz '^FuzzPlannerOps$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/matchcli -run '^$$' -fuzz '^FuzzExec$$' -fuzztime $(FUZZTIME)

test: vet unit fuzz

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

# One table of engine figures at N = 128, 2,048 and 16,384 nodes.
bench-engine:
	$(GO) run ./cmd/fluence bench-engine

# Pods bound per second on 1,000 simulated nodes, fluence against the stock
# kube-scheduler in the same run (about 5 minutes on 2 cores).
bench-scheduler:
	$(GO) test ./test/integration -run '^$$' -bench BenchmarkSchedulingThroughput -benchtime 1x -timeout 60m

demo:
	$(GO) run ./cmd/fluence demo

sim:
	$(GO) run ./cmd/fluence sim

clean:
	$(GO) clean -testcache
