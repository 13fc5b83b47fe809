// Package localcluster runs a Kubernetes control plane inside the calling
// process, on 127.0.0.1 only: an embedded etcd, a kube-apiserver (the real
// one, built from k8s.io/kubernetes, with the apiextensions and aggregation
// layers, so CRDs work), optionally the Job controller and the garbage
// collector and namespace controller (so deletes cascade as on a real
// cluster), a node simulator standing in for the kubelets, and
// kube-scheduler instances.
//
// It is what `fluence up`, `fluence demo` and the integration suite run on.
// Nothing here is a mock: clients talk HTTPS to a real API server whose
// objects live in a real etcd. What is simulated is only what has no place
// on a laptop: nodes (Node objects with a Ready condition and capacity) and
// the kubelets that would run pods on them (NodeSim moves a bound pod to
// Running, then to Succeeded after its run time).
//
// A Cluster owns a private work directory (etcd data, serving certificates,
// the service-account key, kubeconfigs). Stop stops every goroutine it
// started, closes every listener and removes the directory; a caller that
// traps Ctrl-C calls Stop on the way out.
//
// kube-apiserver and kube-scheduler read process-global feature gates, so
// only one Cluster should run at a time when their gates differ; Start sets
// the gates a cluster asks for and restores those a previous cluster set.
package localcluster
