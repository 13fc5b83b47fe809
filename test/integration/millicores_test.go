package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// CPU is counted as Kubernetes counts it, in millicores: a group of 16
// pods of 250m (4 CPUs in all) binds on three 4-CPU nodes, where a whole
// core per pod would have needed 16; a group of 13 pods of one CPU can
// never fit there and is refused with the reason.
func TestSubCoreRequests(t *testing.T) {
	c, inv, _, _ := startFluence(t, 3, "4", "8Gi", nil)

	small := groupPods("small", 16, "250m", 0, 0)
	c.createPods(small...)
	c.waitForPodPhase(time.Minute, corev1.PodRunning, names(small)...)

	big := groupPods("big", 13, "1", time.Second, 0)
	c.createPods(big...)
	note := c.waitForEvent(30*time.Second, "big-0", "FluenceGroupRejected", "big")
	if !strings.Contains(note, "cpu: needs 13000m in total, 12000m available") {
		t.Errorf("the rejection should say 13 CPUs are needed and 12 exist: %q", note)
	}
	if n := c.boundCount(names(big)...); n != 0 {
		t.Errorf("%d pods of the impossible group bound", n)
	}
	c.checkInvariants(inv)
}
