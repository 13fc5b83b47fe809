package plugin

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
)

// SetFeatureDefaults sets the kube-scheduler feature gates fluence needs,
// before flags are parsed (a --feature-gates flag still overrides them).
//
// NominatedNodeNameForExpectation (beta, on by default since 1.35) writes
// status.nominatedNodeName for every pod that waits at Permit. A gang
// waits at Permit by design, so that is one extra API write per pod; worse,
// when an allocation is withdrawn, a sibling's nomination can outlive the
// attempt (the status patch is asynchronous) and the stock resource filter
// then counts that pending pod on the node it was nominated to. The group
// is placed again, turned away again, and never runs: seen in the run8
// integration test before this default.
func SetFeatureDefaults() error {
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		string(features.NominatedNodeNameForExpectation): false,
	})
}
