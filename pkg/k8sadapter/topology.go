package k8sadapter

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A group may ask to be placed close together: within one domain of a
// topology level (the nodes sharing one value of a node label, such as a
// rack). Required: the whole group in one domain, or it waits. Preferred:
// the tightest domain that holds it now, falling back to the levels
// outside it, then anywhere. These annotations ask it, on the pods (their
// template) or their workload; Kueue's topology-aware scheduling
// annotations of a pod template are read the same way, after fluence's.
const (
	TopologyRequiredKey       = "fluence.flux-framework.org/topology-required"
	TopologyPreferredKey      = "fluence.flux-framework.org/topology-preferred"
	KueueTopologyRequiredKey  = "kueue.x-k8s.io/podset-required-topology"
	KueueTopologyPreferredKey = "kueue.x-k8s.io/podset-preferred-topology"
)

// Topology is what an object asks of its group's placement: a required
// or a preferred level, by node label key. Required wins when both are
// given.
type Topology struct {
	Required, Preferred string
}

// TopologyOf reads an object's topology annotations: fluence's first,
// then Kueue's. A value that is not a node label key is an error naming
// the annotation.
func TopologyOf(obj metav1.Object) (Topology, error) {
	var t Topology
	ann := obj.GetAnnotations()
	for _, a := range []struct {
		key  string
		into *string
	}{
		{TopologyRequiredKey, &t.Required},
		{KueueTopologyRequiredKey, &t.Required},
		{TopologyPreferredKey, &t.Preferred},
		{KueueTopologyPreferredKey, &t.Preferred},
	} {
		v, ok := ann[a.key]
		if !ok || *a.into != "" {
			continue
		}
		v = strings.TrimSpace(v)
		if errs := validation.IsQualifiedName(v); len(errs) > 0 {
			return Topology{}, fmt.Errorf("annotation %s: %q is not a node label key: %s", a.key, v, strings.Join(errs, "; "))
		}
		*a.into = v
	}
	if t.Required != "" {
		t.Preferred = ""
	}
	return t, nil
}

// Empty reports whether nothing is asked.
func (t Topology) Empty() bool { return t.Required == "" && t.Preferred == "" }
