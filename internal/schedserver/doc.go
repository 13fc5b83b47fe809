// Package schedserver runs `fluence scheduler`: kube-scheduler, built from
// kube-scheduler's own options and setup (k8s.io/kubernetes/cmd/kube-scheduler/app),
// with the fluence plugins registered and the inspection API
// (pkg/inspect) served on the secure port beside /metrics.
//
// kube-scheduler's own Run builds the secure port's handlers itself and
// offers no way to add one, so this package runs the scheduler: the same
// endpoints (/healthz, /livez, /readyz, /metrics, /metrics/resources,
// /configz, the SLI metrics, profiling, flagz and statusz where enabled),
// the same filters (delegated authentication and authorization, request
// info, cache control, logging, panic recovery), the same informer start
// and leader election, plus the inspection API. One difference in the
// filters: request info knows the /api and /apis prefixes, so a request
// for the inspection API is authorized as a request for its resources
// (list groups.inspect.fluence.flux-framework.org in a namespace), exactly
// as the API server authorizes the same request before the aggregation
// layer forwards it; the paths kube-scheduler serves lie outside those
// prefixes and are authorized as before.
package schedserver
