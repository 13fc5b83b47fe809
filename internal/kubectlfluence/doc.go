// Package kubectlfluence is `kubectl fluence`, the kubectl plugin that
// reads the fluence scheduler's inspection API (pkg/inspect): groups,
// queue, nodes, explain GROUP and graph, with kubectl's conventions
// (kubeconfig and its flags, -n/-A, -o wide|json|yaml).
//
// By default it asks the API server, which forwards the request to the
// scheduler through its aggregation layer (the chart's APIService) with
// the caller's identity; the scheduler authorizes that identity again.
// --scheduler-url asks the scheduler's secure port directly (after
// kubectl port-forward, say) with the kubeconfig's credentials. The
// reasons for the first route, and why the API server's service proxy
// cannot serve here, are in docs/scheduler.md ("Inspection").
package kubectlfluence
