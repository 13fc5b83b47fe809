package inspect

import (
	"encoding/json"
	"sync"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// GroupEncoder encodes group lists for an inspection API that is polled:
// `kubectl fluence groups -w`, a dashboard, a script asking ten times a
// second while thousands of groups run. Converting and encoding every
// group at every answer cost the scheduler's CPU in proportion to the
// groups (some 80 ms for 10,000, BenchmarkGroupList), while between two
// answers few of them change. The core renders a group again as a new
// value when it changes (gang.Published.GroupStatuses), so the encoder
// keeps each group's encoding under the address of the status it came
// from, and encodes again only the groups rendered since the last answer
// and those whose answer moves with the time asked (a group not started
// yet: its wait grows). What it keeps is what the last answer listed.
type GroupEncoder struct {
	mu   sync.Mutex
	kept map[*gang.GroupStatus]json.RawMessage
}

// groupListHead is GroupList without its items, which come last.
type groupListHead struct {
	TypeMeta
	Source
}

// GroupList encodes the answer View.GroupsWithGated gives, for the
// published groups (in key order) and the gated groups the core has not
// seen (in key order, none of them published), as json.Marshal encodes
// it. v's Snapshot is read only for its time.
func (e *GroupEncoder) GroupList(v View, namespace string, groups []*gang.GroupStatus, gated []GatedGroup) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := make(map[*gang.GroupStatus]json.RawMessage, len(e.kept))
	var items []json.RawMessage
	add := func(g Group) error {
		b, err := json.Marshal(g)
		if err == nil {
			items = append(items, b)
		}
		return err
	}
	i := 0
	for _, st := range groups {
		if namespace != "" && st.ID.Namespace != namespace {
			continue
		}
		for ; i < len(gated) && gated[i].ID.Key < st.ID.Key; i++ {
			if namespace == "" || gated[i].ID.Namespace == namespace {
				if err := add(v.gatedGroup(gated[i])); err != nil {
					return nil, err
				}
			}
		}
		if b, ok := e.kept[st]; ok {
			kept[st] = b
			items = append(items, b)
			continue
		}
		if err := add(v.group(*st)); err != nil {
			return nil, err
		}
		if st.Started >= 0 {
			kept[st] = items[len(items)-1]
		}
	}
	for ; i < len(gated); i++ {
		if namespace == "" || gated[i].ID.Namespace == namespace {
			if err := add(v.gatedGroup(gated[i])); err != nil {
				return nil, err
			}
		}
	}
	e.kept = kept
	// The items are spliced in where json.Marshal(GroupList) puts them,
	// last: encoding them as json.RawMessage would have every byte
	// scanned again, which costs as much as encoding them.
	head, err := json.Marshal(groupListHead{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindGroupList}, Source: v.source()})
	if err != nil {
		return nil, err
	}
	n := len(head) + len(`,"items":[]`) + len(items)
	for _, b := range items {
		n += len(b)
	}
	out := make([]byte, 0, n)
	out = append(append(out, head[:len(head)-1]...), `,"items":[`...)
	for i, b := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, "]}"...), nil
}
