// Package schedperf runs Kubernetes' own scheduler benchmark harness
// (k8s.io/kubernetes/test/integration/scheduler_perf) with fluence
// registered as an out-of-tree plugin, so fluence's figures come from the
// same workloads, the same API server and the same measuring code as the
// in-tree GangScheduling figures published upstream.
//
// Everything but this file carries the schedperf build tag: the benchmark
// takes tens of minutes and is run by `make bench-schedperf` (and the
// other bench-schedperf-* targets), never by `make test`.
// docs/design/009-reference-benchmark.md describes what is measured.
package schedperf
