package integration

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// oneSchedulerConfig is deploy/one-scheduler-config.yaml: kube-scheduler's
// stock default-scheduler profile and fluence's in one process.
func oneSchedulerConfig(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/one-scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The one-scheduler configuration's fluence profile is the shipped one but
// for the queue sort, which every profile of the process shares.
func TestOneSchedulerConfigMatchesShipped(t *testing.T) {
	one, err := decodeSchedulerConfig(oneSchedulerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := decodeSchedulerConfig(fluenceConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Profiles) != 2 || one.Profiles[0].SchedulerName != "default-scheduler" || one.Profiles[1].SchedulerName != "fluence" {
		t.Fatalf("profiles %v, want default-scheduler and fluence", one.Profiles)
	}
	want := shipped.Profiles[0].DeepCopy()
	want.Plugins.QueueSort = one.Profiles[1].Plugins.QueueSort
	if diff := cmp.Diff(want, &one.Profiles[1]); diff != "" {
		t.Errorf("fluence profile differs from deploy/scheduler-config.yaml beyond the queue sort (-shipped +one):\n%s", diff)
	}
	if one.ClientConnection != shipped.ClientConnection {
		t.Errorf("client connection %+v, shipped %+v", one.ClientConnection, shipped.ClientConnection)
	}
}

// raceRound creates, at once and from several goroutines, stock pods and
// fluence groups that together ask for twice the cluster: both kinds race
// for the same free nodes. It returns the pods' names.
func (c *cluster) raceRound(round, stockPods, groups, groupSize int) []string {
	c.t.Helper()
	var pods []*corev1.Pod
	for i := range stockPods {
		pods = append(pods, newTestPod(fmt.Sprintf("r%d-stock-%d", round, i), "default-scheduler", "2", "", time.Second, nil))
	}
	for g := range groups {
		pods = append(pods, groupPods(fmt.Sprintf("r%d-g%d", round, g), groupSize, "2", time.Second, 2*time.Second)...)
	}
	// Interleave stock and group pods, so both schedulers have work at once.
	var mixed []*corev1.Pod
	for i := 0; len(mixed) < len(pods); i++ {
		if i < stockPods {
			mixed = append(mixed, pods[i])
		}
		if j := stockPods + i; j < len(pods) && i < len(pods)-stockPods {
			mixed = append(mixed, pods[j])
		}
	}
	var wg sync.WaitGroup
	const writers = 4
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(mixed); i += writers {
				c.createPods(mixed[i])
			}
		}()
	}
	wg.Wait()
	return names(pods)
}

// Stock pods and fluence groups race for the same nodes. With both profiles
// in one process (one scheduling queue, one cache) no node is ever
// over-committed. With two schedulers, each learns of the other's pods only
// once their Bindings come back through its informer; the test counts the
// over-commits that window lets through and reports them.
func TestOneSchedulerMode(t *testing.T) {
	const rounds, nodes = 6, 4
	for _, mode := range []string{"one scheduler", "two schedulers"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t)
			c.addNodes("node", nodes, "4", "8Gi")
			inv := startInvariants(c)
			startNodeSim(c, simOptions{})
			if mode == "one scheduler" {
				c.startScheduler(oneSchedulerConfig(t), inv.registry())
			} else {
				c.startScheduler(stockConfig, nil)
				c.startScheduler(fluenceConfig(t, nil), inv.registry())
			}
			// 4 nodes of 4 CPUs: 8 stock pods and 4 groups of 2, all of 2 CPUs,
			// ask for 32 CPUs, twice what there is.
			for r := range rounds {
				all := c.raceRound(r, 2*nodes, nodes, 2)
				c.waitForPodPhase(2*time.Minute, corev1.PodSucceeded, all...)
			}
			v := inv.violations()
			t.Logf("%s: %d over-commit episodes in %d rounds", mode, len(v), rounds)
			for _, line := range v {
				t.Logf("  %s", line)
			}
			if mode == "one scheduler" {
				c.checkInvariants(inv)
			} else if p := inv.partialGroups(); len(p) > 0 {
				t.Errorf("groups bound partly:\n%s", strings.Join(p, "\n"))
			}
		})
	}
}
