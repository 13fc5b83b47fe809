// Package deploy carries the files users deploy fluence with, so that the
// binary can use them as shipped: `fluence up` and `fluence demo` run the
// scheduler with the same configuration a cluster gets from this directory,
// and install the same CRD.
package deploy

import _ "embed"

// SchedulerConfig is scheduler-config.yaml, the KubeSchedulerConfiguration
// with the fluence profile.
//
//go:embed scheduler-config.yaml
var SchedulerConfig string

// OneSchedulerConfig is one-scheduler-config.yaml: kube-scheduler's stock
// default-scheduler profile and the fluence profile in one process.
//
//go:embed one-scheduler-config.yaml
var OneSchedulerConfig string

// PodGroupCRD is crds/scheduling.x-k8s.io_podgroups.yaml, the
// CustomResourceDefinition of the scheduler-plugins PodGroup.
//
//go:embed crds/scheduling.x-k8s.io_podgroups.yaml
var PodGroupCRD string
