package inspect

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// StateGated is the state (and the explanation's verdict) of a group
// fluence has not seen because the pods of it that exist all wait for
// their scheduling gates.
const StateGated = "gated"

// GatedGroup is a group the gang core has not heard of because every pod
// of it that reached the scheduler waits for its scheduling gates
// (spec.schedulingGates; Kueue, for one, gates pods until it admits their
// workload): kube-scheduler hands no gated pod to its plugins, so the core
// knows only the pods it was told about, and none of these. The scheduler
// finds such pods in its informer's cache and resolves their group as it
// would at PreFilter; the answers below say so rather than that there is
// no such group.
type GatedGroup struct {
	ID gang.GroupID
	// Pods are its gated pods, by name.
	Pods []GatedPod
	// Ungated counts its pods without gates that the core has not counted
	// either (they have not reached the scheduling cycle yet).
	Ungated int
	// Priority is the highest of its pods' priorities.
	Priority int32
	// Created is when the oldest of its pods was created.
	Created time.Time
}

// GatedPod is one pod that waits for its scheduling gates.
type GatedPod struct {
	Name  string
	Gates []string
}

// gates returns the gates of the group's pods, each with the names of the
// pods it holds, by gate name.
func (g GatedGroup) gates() (names []string, pods map[string][]string) {
	pods = map[string][]string{}
	for _, p := range g.Pods {
		for _, gate := range p.Gates {
			if !slices.Contains(pods[gate], p.Name) {
				pods[gate] = append(pods[gate], p.Name)
			}
		}
	}
	for gate := range pods {
		names = append(names, gate)
	}
	slices.Sort(names)
	return names, pods
}

// waiting says how many of the group's pods exist and wait for their
// gates, and which gates: "its 3 pods exist but wait for their scheduling
// gates (kueue.x-k8s.io/admission)"; "exist" only when no other pod of it
// exists.
func (g GatedGroup) waiting() string {
	n, size := len(g.Pods), int(g.ID.Size)
	var s string
	switch {
	case g.Ungated > 0 && n == 1:
		// Not all the pods that exist: some have no gates.
		s = fmt.Sprintf("1 of its %d pods waits for its scheduling gates", size)
	case g.Ungated > 0:
		s = fmt.Sprintf("%d of its %d pods wait for their scheduling gates", n, size)
	case n == size && n == 1:
		s = "its pod exists but waits for its scheduling gates"
	case n == size:
		s = fmt.Sprintf("its %d pods exist but wait for their scheduling gates", n)
	case n == 1:
		s = fmt.Sprintf("1 of its %d pods exists but waits for its scheduling gates", size)
	default:
		s = fmt.Sprintf("%d of its %d pods exist but wait for their scheduling gates", n, size)
	}
	names, _ := g.gates()
	return s + " (" + strings.Join(names, ", ") + ")"
}

func (v View) gatedGroup(g GatedGroup) Group {
	names, _ := g.gates()
	out := Group{
		Key: g.ID.Key, Namespace: g.ID.Namespace, Name: g.ID.Name, Source: g.ID.Source, Size: g.ID.Size,
		State: StateGated, Reason: g.waiting(), Priority: g.Priority, Gated: len(g.Pods), Gates: names,
		FirstSeen: g.Created.UTC(),
	}
	out.WaitSeconds = max(0, v.Clock.At(v.Snapshot.Now).Sub(g.Created).Seconds())
	return out
}

// GroupsWithGated is Groups with, in key order among them, the groups of
// the namespace ("" for all) that fluence has not seen because their pods
// wait for their scheduling gates (state gated). gated holds no group the
// snapshot knows.
func (v View) GroupsWithGated(namespace string, gated []GatedGroup) GroupList {
	out := v.Groups(namespace)
	added := false
	for _, g := range gated {
		if namespace == "" || g.ID.Namespace == namespace {
			out.Items = append(out.Items, v.gatedGroup(g))
			added = true
		}
	}
	if added {
		slices.SortStableFunc(out.Items, func(a, b Group) int { return cmp.Compare(a.Key, b.Key) })
	}
	return out
}

// ExplainGated explains a group fluence has not seen because its pods
// wait for their scheduling gates.
func (v View) ExplainGated(g GatedGroup) Explanation {
	out := Explanation{
		TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindExplanation}, Source: v.source(),
		Group: v.gatedGroup(g), Verdict: StateGated, Queued: len(v.Snapshot.Queue),
		Summary: fmt.Sprintf("%s: %s, so fluence has not seen the group yet: kube-scheduler hands it no pod before the pod's gates are lifted.", g.ID.Key, g.waiting()),
	}
	names, pods := g.gates()
	for _, gate := range names {
		held := pods[gate]
		what := "pod " + held[0]
		if len(held) > 1 {
			what = fmt.Sprintf("%d pods: %s", len(held), listSome(held, 5))
		}
		out.Details = append(out.Details, fmt.Sprintf("Gate %s is on %s.", gate, what))
	}
	switch {
	case g.Ungated == 1:
		out.Details = append(out.Details, "1 more exists without gates but has not reached fluence's scheduling cycle yet.")
	case g.Ungated > 1:
		out.Details = append(out.Details, fmt.Sprintf("%d more exist without gates but have not reached fluence's scheduling cycle yet.", g.Ungated))
	}
	switch missing := int(g.ID.Size) - len(g.Pods) - g.Ungated; {
	case missing == 1:
		out.Details = append(out.Details, fmt.Sprintf("The group needs %d pods: 1 more does not exist yet.", g.ID.Size))
	case missing > 1:
		out.Details = append(out.Details, fmt.Sprintf("The group needs %d pods: %d more do not exist yet.", g.ID.Size, missing))
	}
	lift := "Whoever set the gates lifts them"
	for _, gate := range names {
		if strings.HasPrefix(gate, "kueue.x-k8s.io/") {
			lift += " (Kueue lifts " + gate + " when it admits the workload)"
			break
		}
	}
	out.Details = append(out.Details, "Nothing is held for the group meanwhile, and it is not queued. "+lift+
		"; fluence counts each pod once its gates are gone and places the group whole once all its pods count.")
	return out
}

// listSome joins up to n names, and says how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
