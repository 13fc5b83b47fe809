package sim

import (
	"strings"
	"testing"
)

// Hand-worked cases of quota admission in front of fluence. The cluster
// (4 nodes of 3 CPUs) holds every group at once, so admission alone holds
// groups back.
func TestQuotaOverFluence(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cpu           int64 // millicores; 0 the cluster's total
		groups        []GroupSpec
		wantStarts    map[string]float64
		wantCompleted int
		wantStalled   bool
	}{
		{
			// 4 CPUs of quota: A and B are admitted at 0, C once they
			// are released at 10, though fluence alone would start all
			// three at 0.
			name: "quota limits concurrency", cpu: 4000,
			groups:     []GroupSpec{mGroup("A", 0, 2, 1, 10), mGroup("B", 0, 2, 1, 10), mGroup("C", 0, 2, 1, 10)},
			wantStarts: map[string]float64{"A": 0, "B": 0, "C": 10}, wantCompleted: 3,
		},
		{
			// BestEffortFIFO, as in the quota model: B (3 CPUs) waits
			// beside A; C (2 CPUs, later) fits and starts; B is admitted
			// only when both are released.
			name: "best effort FIFO", cpu: 4000,
			groups:     []GroupSpec{mGroup("A", 0, 2, 1, 10), mGroup("B", 1, 3, 1, 10), mGroup("C", 2, 1, 2, 10)},
			wantStarts: map[string]float64{"A": 0, "B": 12, "C": 2}, wantCompleted: 3,
		},
		{
			// The quota is the cluster: admission never holds a group
			// the cluster has room for (A and B fill it; C comes after
			// A).
			name:       "quota = cluster total",
			groups:     []GroupSpec{mGroup("A", 0, 2, 3, 10), mGroup("B", 1, 2, 3, 10), mGroup("C", 12, 2, 3, 10)},
			wantStarts: map[string]float64{"A": 0, "B": 1, "C": 12}, wantCompleted: 3,
		},
		{
			// A group above the whole quota is never admitted; fluence
			// never sees it, and the run ends with it Pending.
			name: "group above the quota", cpu: 4000,
			groups:     []GroupSpec{mGroup("A", 0, 2, 1, 10), mGroup("big", 0, 5, 1, 10)},
			wantStarts: map[string]float64{"A": 0, "big": -1}, wantCompleted: 1, wantStalled: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFluence(FluenceConfig{})
			if err != nil {
				t.Fatal(err)
			}
			s := NewQuotaOver(f, tc.cpu, 0)
			w := &Workload{Name: tc.name, Cluster: mNodes(4, 3), Groups: tc.groups}
			r := mRun(t, w, s, Options{})
			mCheckStarts(t, r, tc.wantStarts)
			if r.Stalled != tc.wantStalled || r.JobsCompleted != tc.wantCompleted {
				t.Errorf("%s; want %d completed, stalled %v", mSummary(r), tc.wantCompleted, tc.wantStalled)
			}
			if q := s.(*quotaOver); !tc.wantStalled && (q.usedCPU != 0 || q.usedPods != 0 || len(q.waiting) != 0) {
				t.Errorf("quota left in use: %d millicores, %d pods, %d waiting", q.usedCPU, q.usedPods, len(q.waiting))
			}
		})
	}
}

// The composed scheduler is named for both parts and labelled a model.
func TestQuotaOverNames(t *testing.T) {
	f, err := NewFluence(FluenceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewQuotaOver(f, 0, 0)
	if s.Name() != "quota+fluence" || !s.Model() {
		t.Errorf("name %q, model %v; want quota+fluence, a model", s.Name(), s.Model())
	}
	if c := s.Config(); !strings.HasPrefix(c, "model of Kueue-like quota admission: cpu = cluster total, pods unlimited, then fluence: the fluence gang core") {
		t.Errorf("config %q", c)
	}
}
