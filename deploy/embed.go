// Package deploy carries the files users deploy fluence with, so that the
// binary can use them as shipped: `fluence up` and `fluence demo` run the
// scheduler with the same configuration a cluster gets from this directory.
package deploy

import _ "embed"

// SchedulerConfig is scheduler-config.yaml, the KubeSchedulerConfiguration
// with the fluence profile.
//
//go:embed scheduler-config.yaml
var SchedulerConfig string
