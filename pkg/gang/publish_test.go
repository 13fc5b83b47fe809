package gang

import (
	"fmt"
	"reflect"
	"sync"
)

// checkPublished publishes and compares what a reader of the published
// state sees with Snapshot and Stats, which scan the core: they must be
// the same after every step.
func checkPublished(c *Core, now int64) error {
	pub := c.Publish()
	got, want := pub.Snapshot(now), c.Snapshot(now)
	got.format, want.format = nil, nil
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("the published snapshot differs from Snapshot: %s", snapshotDiff(got, want))
	}
	if gs, ws := pub.Stats(), c.Stats(); !reflect.DeepEqual(gs, ws) {
		return fmt.Errorf("the published stats differ from Stats:\npublished %+v\nscanned   %+v", gs, ws)
	}
	return checkStatuses(c, pub, got)
}

// rendered holds the group statuses a core published last, as rendered
// then, by address: for the core checked last only (a fuzzer makes a core
// per input).
var rendered struct {
	sync.Mutex
	core     *Core
	statuses map[*GroupStatus]string
}

// checkStatuses checks GroupStatuses against the published snapshot, and
// that no status published before was changed since (readers keep what
// they derive from one under its address: inspect.GroupEncoder).
func checkStatuses(c *Core, pub *Published, snap Snapshot) error {
	sts := pub.GroupStatuses()
	if len(sts) != len(snap.Groups) {
		return fmt.Errorf("GroupStatuses has %d groups, the snapshot %d", len(sts), len(snap.Groups))
	}
	rendered.Lock()
	defer rendered.Unlock()
	var before map[*GroupStatus]string
	if rendered.core == c {
		before = rendered.statuses
	}
	now := map[*GroupStatus]string{}
	for i, st := range sts {
		g := snap.Groups[i]
		g.Eligible, g.Free, g.LargestFree = 0, Resources{}, Resources{}
		if !reflect.DeepEqual(*st, g) {
			return fmt.Errorf("GroupStatuses[%d] differs from the snapshot's group:\nstatus   %+v\nsnapshot %+v", i, *st, g)
		}
		if !pub.HasGroup(st.ID.Key) {
			return fmt.Errorf("HasGroup(%q) is false for a published group", st.ID.Key)
		}
		now[st] = fmt.Sprintf("%+v", *st)
		if was, ok := before[st]; ok && was != now[st] {
			return fmt.Errorf("a published group status changed after it was published:\nthen %s\nnow  %s", was, now[st])
		}
	}
	if pub.HasGroup("no/such-group") {
		return fmt.Errorf("HasGroup is true for a group never seen")
	}
	rendered.core, rendered.statuses = c, now
	return nil
}

// snapshotDiff names the first part of two snapshots that differs.
func snapshotDiff(got, want Snapshot) string {
	if len(got.Groups) != len(want.Groups) {
		return fmt.Sprintf("%d groups published, %d scanned", len(got.Groups), len(want.Groups))
	}
	for i := range got.Groups {
		if !reflect.DeepEqual(got.Groups[i], want.Groups[i]) {
			return fmt.Sprintf("group\npublished %+v\nscanned   %+v", got.Groups[i], want.Groups[i])
		}
	}
	if len(got.Nodes) != len(want.Nodes) {
		return fmt.Sprintf("%d nodes published, %d scanned", len(got.Nodes), len(want.Nodes))
	}
	for i := range got.Nodes {
		if !reflect.DeepEqual(got.Nodes[i], want.Nodes[i]) {
			return fmt.Sprintf("node\npublished %+v\nscanned   %+v", got.Nodes[i], want.Nodes[i])
		}
	}
	if !reflect.DeepEqual(got.Queue, want.Queue) {
		return fmt.Sprintf("queue\npublished %+v\nscanned   %+v", got.Queue, want.Queue)
	}
	if !reflect.DeepEqual(got.Graph, want.Graph) {
		return fmt.Sprintf("graph\npublished %+v\nscanned   %+v", got.Graph, want.Graph)
	}
	got.Groups, got.Nodes, got.Queue, got.Graph = nil, nil, nil, GraphSummary{}
	want.Groups, want.Nodes, want.Queue, want.Graph = nil, nil, nil, GraphSummary{}
	return fmt.Sprintf("\npublished %+v\nscanned   %+v", got, want)
}
