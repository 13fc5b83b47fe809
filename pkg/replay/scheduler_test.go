package replay

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

func TestNewScheduler(t *testing.T) {
	for _, name := range slices.Concat(SchedulerNames, KueueSchedulerNames) {
		s, err := NewScheduler(name)
		if err != nil || s.Name() != name {
			t.Errorf("NewScheduler(%q) = %v, %v", name, s, err)
		}
	}
	for name, want := range map[string]string{"coscheduling": "not included: the Coscheduling plugin", "kueue": "unknown scheduler"} {
		if _, err := NewScheduler(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewScheduler(%q): err = %v, want %q", name, err, want)
		}
	}
}

// The prediction of fluence plans as the shipped configuration says.
func TestShippedFluenceConfig(t *testing.T) {
	c, err := shippedFluenceConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.MatchPolicy != "lonode" || c.Queue.Policy != "easy" || c.DefaultDuration != 3600 {
		t.Errorf("shipped fluence config read as %+v", c)
	}
	if cfg := (fluenceScheduler{}).Config(); !strings.Contains(cfg, "lonode") || !strings.Contains(cfg, "easy") {
		t.Errorf("config line %q does not name the policies", cfg)
	}
}

// Each scheduler's Jobs name it, and gang creates the PodGroup its pods
// name, with the Job's size as gang minCount. Behind Kueue, the Job (not
// its pods) names the LocalQueue and is created suspended, for Kueue to
// start; the placing scheduler shapes it as without Kueue.
func TestPrepare(t *testing.T) {
	g := group("g", 4, 1000, 0, 1, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name, schedulerName, podGroup, queue string
	}{
		{name: "fluence", schedulerName: "fluence"},
		{name: "stock"},
		{name: "gang", podGroup: "g"},
		{name: "stock+kueue", queue: kueueQueue},
		{name: "fluence+kueue", schedulerName: "fluence", queue: kueueQueue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewScheduler(tc.name)
			client := fake.NewClientset()
			job := JobFor("demo", "g", 0, &g)
			if err := s.Prepare(ctx, client, job); err != nil {
				t.Fatal(err)
			}
			spec := job.Spec.Template.Spec
			if spec.SchedulerName != tc.schedulerName {
				t.Errorf("schedulerName %q, want %q", spec.SchedulerName, tc.schedulerName)
			}
			if q := job.Labels[localcluster.KueueQueueLabel]; q != tc.queue {
				t.Errorf("the Job's queue label %q, want %q", q, tc.queue)
			}
			if suspended := ptr.Deref(job.Spec.Suspend, false); suspended != (tc.queue != "") {
				t.Errorf("suspended %v; want it suspended only behind Kueue", suspended)
			}
			if q, ok := job.Spec.Template.Labels[localcluster.KueueQueueLabel]; ok {
				t.Errorf("the pods carry the queue label %q: Kueue would admit each pod on its own", q)
			}
			if job.Labels[GroupLabel] != "0" {
				t.Errorf("the Job lost its group label: %v", job.Labels)
			}
			pgs, err := client.SchedulingV1beta1().PodGroups("demo").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.podGroup == "" {
				if spec.SchedulingGroup != nil || len(pgs.Items) != 0 {
					t.Errorf("schedulingGroup %v, %d PodGroups; want none", spec.SchedulingGroup, len(pgs.Items))
				}
				return
			}
			if spec.SchedulingGroup == nil || *spec.SchedulingGroup.PodGroupName != tc.podGroup {
				t.Fatalf("schedulingGroup %v, want PodGroup %s", spec.SchedulingGroup, tc.podGroup)
			}
			if len(pgs.Items) != 1 || pgs.Items[0].Spec.SchedulingPolicy.Gang == nil || pgs.Items[0].Spec.SchedulingPolicy.Gang.MinCount != 4 {
				t.Errorf("PodGroups %+v, want one with gang minCount 4", pgs.Items)
			}
		})
	}
}

// The simulator predicts fluence and stock, and each behind Kueue with
// the quota model's admission in front; gang has no model and says so.
func TestPredict(t *testing.T) {
	w := workload(group("a", 2, 2000, 0, 1, 0), group("b", 2, 2000, 0.1, 1, 0), group("c", 1, 1000, 0.2, 1, 0))
	for name, model := range map[string]string{"fluence": "fluence", "stock": "stock", "stock+kueue": "quota", "fluence+kueue": "quota+fluence"} {
		s, _ := NewScheduler(name)
		r, why, err := Predict(s, w, 20*time.Second)
		if err != nil || r == nil {
			t.Fatalf("%s: %v, %q, %v", name, r, why, err)
		}
		if r.JobsCompleted != 3 || r.LowerBound <= 0 || r.Scheduler != model {
			t.Errorf("%s predicted %d/3 completed, bound %v, scheduler %q; want 3/3 by %s", name, r.JobsCompleted, r.LowerBound, r.Scheduler, model)
		}
	}
	gang, _ := NewScheduler("gang")
	if r, why, err := Predict(gang, w, 20*time.Second); r != nil || err != nil || !strings.Contains(why, "no model") {
		t.Errorf("gang: %v, %q, %v; want no prediction and the reason", r, why, err)
	}
}
