package sim

import "testing"

// Hand-worked cases of the quota model. Clusters are roomy unless the case
// is about room, so admission alone decides when groups start.
func TestQuota(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cluster    Cluster
		cpu        int64 // millicores
		pods       int
		groups     []GroupSpec
		wantStarts map[string]float64
	}{
		{
			// 4 CPUs of quota: A and B (2 CPUs each) are admitted at 0, C
			// when they are released at 10.
			name:    "quota limits concurrency",
			cluster: mNodes(4, 3), cpu: 4000,
			groups: []GroupSpec{
				mGroup("A", 0, 2, 1, 10),
				mGroup("B", 0, 2, 1, 10),
				mGroup("C", 0, 2, 1, 10),
			},
			wantStarts: map[string]float64{"A": 0, "B": 0, "C": 10},
		},
		{
			// BestEffortFIFO: B (3 CPUs) does not fit beside A (2 of 4), but
			// C (2 CPUs, later) does and runs at once. When A is released at
			// 10, C still holds 2: B waits for C's release at 12.
			name:    "best effort FIFO skips a group that does not fit",
			cluster: mNodes(4, 3), cpu: 4000,
			groups: []GroupSpec{
				mGroup("A", 0, 2, 1, 10),
				mGroup("B", 1, 3, 1, 10),
				mGroup("C", 2, 1, 2, 10),
			},
			wantStarts: map[string]float64{"A": 0, "B": 12, "C": 2},
		},
		{
			// Pod quota 2, cpu quota the cluster's: one 2-pod group at a time.
			name:    "pod quota",
			cluster: mNodes(4, 3), pods: 2,
			groups: []GroupSpec{
				mGroup("A", 0, 2, 1, 10),
				mGroup("B", 0, 2, 1, 10),
			},
			wantStarts: map[string]float64{"A": 0, "B": 10},
		},
		{
			// Quota above the free cpu (8 of quota, 6 CPUs, one 2-CPU pod
			// per node): both groups are admitted at 0 but B's pods wait
			// for A's nodes.
			name:    "overcommitted quota: admitted pods wait for room",
			cluster: mNodes(2, 3), cpu: 8000,
			groups: []GroupSpec{
				mGroup("A", 0, 2, 2, 10),
				mGroup("B", 0, 2, 2, 10),
			},
			wantStarts: map[string]float64{"A": 0, "B": 10},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Workload{Name: tc.name, Cluster: tc.cluster, Groups: tc.groups}
			s := NewQuotaWith(tc.cpu, tc.pods, 0) // instantaneous attempts keep the worked times round
			r := mRun(t, w, s, Options{})
			mCheckStarts(t, r, tc.wantStarts)
			if r.Stalled || r.JobsCompleted != len(tc.groups) {
				t.Errorf("%s", mSummary(r))
			}
			// Every release returned its quota.
			if q := s.(*quota); q.usedCPU != 0 || q.usedPods != 0 || len(q.waiting) != 0 {
				t.Errorf("quota left in use: %d millicores, %d pods, %d waiting", q.usedCPU, q.usedPods, len(q.waiting))
			}
		})
	}
}

// A group larger than the whole quota is never admitted: it stays Pending
// (as Kueue leaves it inadmissible) without blocking the others.
func TestQuotaGroupAboveQuota(t *testing.T) {
	w := &Workload{Cluster: mNodes(4, 3), Groups: []GroupSpec{
		mGroup("big", 0, 3, 2, 10),
		mGroup("small", 1, 1, 2, 10),
	}}
	r := mRun(t, w, NewQuotaWith(4000, 0, 0), Options{})
	mCheckStarts(t, r, map[string]float64{"big": -1, "small": 1})
	if !r.Stalled || r.PendingAtStall != 3 || r.JobsCompleted != 1 {
		t.Errorf("%s", mSummary(r))
	}
}
