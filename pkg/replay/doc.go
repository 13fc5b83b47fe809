// Package replay runs a pkg/sim workload live: on a local control plane
// (pkg/localcluster), under a real scheduler, with its times compressed.
// It is what `fluence demo` runs, and the glue between the simulator's
// workloads and Kubernetes objects; the simulator itself stays free of
// Kubernetes.
//
// # The replay
//
// Each group becomes an Indexed Job (completions = parallelism = the
// group's size) whose pods request what the group's pods request. The
// workload's times are divided by a compression factor (Compress): the
// arrivals, and the hold, which is the group's runtime plus its release
// delay (in Kubernetes a pod frees its node when it ends).
//
// A pod does not run for a fixed time of its own. The experiments ran MPI
// jobs: a job computes only once all of its ranks run, so a job with some
// pods Running and others Pending holds its CPUs and makes no progress.
// Pods therefore carry their job's hold in HoldAnnotation and no run time
// for the node simulator; the Launcher watches them and, once every pod of
// a Job has been Running for the hold, ends them all (Succeeded). A
// scheduler that binds part of a gang leaves it holding CPUs for good,
// which is how the stock kube-scheduler clogged in the measured run.
//
// # Schedulers
//
// A Scheduler starts one scheduler on a fresh cluster and shapes the Jobs
// for it: fluence (the shipped configuration, Jobs grouped by their
// owner), stock (kube-scheduler's default profile) and gang
// (kube-scheduler 1.37's own gang scheduling: the GenericWorkload gate on,
// which in 1.37 carries the workload scheduling cycle, and one
// scheduling.k8s.io/v1beta1 PodGroup per Job), and stock+kueue and
// fluence+kueue: the real Kueue, a process of its own
// (localcluster.Cluster.StartKueue), admitting each Job whole through one
// ClusterQueue whose quota is the nodes' allocatable, before stock or
// fluence places it. Each names the simulator's scheduler that predicts
// it, if any (quota and quota+fluence for the Kueue pair).
//
// # Recording
//
// The Recorder watches pods and stamps each bind, start and finish with
// the time it received the event: the API server's own timestamps have
// one-second resolution, too coarse for runs compressed tenfold. From
// these it keeps the counts the progress lines show, detects a stall
// (nothing bound or finished for a window while pods wait) and builds a
// sim.Result in the workload's own seconds, so that pkg/sim/report's
// table, files and plots, and the simulator's prediction, apply as they
// are.
package replay
