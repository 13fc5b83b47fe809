package localcluster

import (
	"fmt"
	"maps"
	"sync"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

var (
	gatesMu sync.Mutex
	// gatesBefore holds, for every gate some cluster set, its value before
	// the first one did.
	gatesBefore = map[string]bool{}
)

// setGates makes the process-global feature gates those the process had
// before any cluster changed them, plus want. kube-apiserver and
// kube-scheduler in this process read these gates.
func setGates(want map[string]bool) error {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for name := range want {
		if _, ok := known[featuregate.Feature(name)]; !ok {
			return fmt.Errorf("feature gate %q: not a gate of Kubernetes %s", name, "v1.37")
		}
		if _, ok := gatesBefore[name]; !ok {
			gatesBefore[name] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name))
		}
	}
	values := maps.Clone(gatesBefore)
	maps.Copy(values, want)
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(values); err != nil {
		return fmt.Errorf("feature gates: %w", err)
	}
	return nil
}
