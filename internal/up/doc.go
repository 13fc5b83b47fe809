// Package up is `fluence up`: a local control plane (pkg/localcluster) with
// simulated nodes, the Job controller, the scheduler-plugins PodGroup CRD
// and one in-process kube-scheduler running two profiles, kube-scheduler's
// stock default-scheduler and fluence (deploy/one-scheduler-config.yaml),
// for people to try fluence with kubectl before they install anything.
//
// Options describe the cluster and are checked before anything starts;
// Run starts it, writes a kubeconfig, prints "key: value" lines a script
// can read (api-server, kubeconfig, work-dir, nodes, ...; "ready: true"
// last) and how to use it, and stops everything and removes its files when
// its context ends.
package up
