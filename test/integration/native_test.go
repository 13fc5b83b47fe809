package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// newNativeCluster starts the complete kube-apiserver serving Kubernetes
// PodGroups (scheduling.k8s.io/v1beta1): the API and the pod's
// spec.schedulingGroup need the GenericWorkload gate and the runtime-config.
//
// The apiserver runs in this process and shares its feature gates with
// any scheduler started in it: with GenericWorkload on, kube-scheduler runs
// its own pod-group cycle for such pods and writes PodGroupInitiallyScheduled
// itself. The scheduler under test therefore runs as its own process
// (startFluenceProcess), with kube-scheduler's workload gates off as
// `fluence scheduler` ships: fluence alone places the groups and writes
// their status.
func newNativeCluster(t *testing.T) *cluster {
	return startCluster(t, localcluster.Options{FeatureGates: map[string]bool{"GenericWorkload": true}})
}

// startFluenceProcess runs `fluence scheduler` with the test configuration
// against c, as a separate process.
func (c *cluster) startFluenceProcess(t *testing.T, extraArgs ...string) *process {
	t.Helper()
	bin := buildFluence(t)
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(setClient(fluenceConfig(t, nil), "kubeconfig", c.kubeconfigFile())), 0o600); err != nil {
		t.Fatal(err)
	}
	return startProcess(t, bin, append([]string{"scheduler", "--config", config, "--secure-port", "0", "-v", "2"}, extraArgs...)...)
}

func (c *cluster) createNativePodGroup(name string, minCount int32) {
	c.t.Helper()
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.NS},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}},
	}
	if _, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).Create(c.Ctx, pg, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating PodGroup %s: %v", name, err)
	}
}

// nativePods returns n pods of cpu each naming the PodGroup group in
// spec.schedulingGroup.
func nativePods(group string, n int, cpu string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := newTestPod(fmt.Sprintf("%s-%d", group, i), "fluence", cpu, "", time.Second, nil)
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
		out = append(out, p)
	}
	return out
}

// nativeCondition waits for the PodGroupInitiallyScheduled condition of a PodGroup
// with the given status and returns it.
func (c *cluster) nativeCondition(name string, status metav1.ConditionStatus) metav1.Condition {
	c.t.Helper()
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pg, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).Get(c.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
		return last != nil && last.Status == status, nil
	})
	if err != nil {
		c.t.Fatalf("PodGroup %s: no condition %s=%s; last %+v", name, schedulingv1beta1.PodGroupInitiallyScheduled, status, last)
	}
	return *last
}

// Pods naming a Kubernetes PodGroup in spec.schedulingGroup form a group of
// its gang minCount; the PodGroup's PodGroupInitiallyScheduled condition says
// whether the group is placed, or why not.
//
// It runs with kube-scheduler's workload gates as `fluence scheduler` ships
// them (off), and on: then kube-scheduler pulls a group's pods from its
// queue together and runs them through one pod-group cycle.
func TestNativePodGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"gates off", nil},
		{"gates on", []string{"--feature-gates=GenericWorkload=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testNativePodGroup(t, tc.args) })
	}
}

func testNativePodGroup(t *testing.T, args []string) {
	c := newNativeCluster(t)
	c.addNodes("node", 4, "2", "8Gi")
	startNodeSim(c, simOptions{})
	proc := c.startFluenceProcess(t, args...)
	// With the gates on, kube-scheduler writes PodGroupInitiallyScheduled itself
	// after each pod-group cycle, with its own message; fluence leaves the
	// condition to it and gives its reason in events.
	gatesOn := len(args) > 0

	c.createNativePodGroup("solver", 6)
	c.createNativePodGroup("huge", 50)
	solver := nativePods("solver", 6, "1")
	huge := nativePods("huge", 3, "1")
	if got, err := c.Client.CoreV1().Pods(c.NS).Create(c.Ctx, solver[0], metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else if got.Spec.SchedulingGroup == nil {
		t.Fatal("the API server dropped spec.schedulingGroup: GenericWorkload is off")
	}
	// Five of six must wait: the group is six.
	c.createPods(solver[1:5]...)
	c.waitForEvent(30*time.Second, "solver-0", "FailedScheduling", "of 6 exist")
	waiting := c.nativeCondition("solver", metav1.ConditionFalse)
	if waiting.Reason != schedulingv1beta1.PodGroupReasonUnschedulable || (!gatesOn && !strings.Contains(waiting.Message, "fluence: ")) {
		t.Errorf("waiting group's condition: %+v", waiting)
	}
	if n := c.boundCount(names(solver[:5])...); n != 0 {
		t.Fatalf("%d pods of an incomplete group bound", n)
	}
	c.createPods(solver[5])
	c.createPods(huge...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(solver)...)
	placed := c.nativeCondition("solver", metav1.ConditionTrue)
	if placed.Reason != "Scheduled" || placed.LastTransitionTime.Before(&waiting.LastTransitionTime) {
		t.Errorf("placed group's condition: %+v (waiting was %+v)", placed, waiting)
	}

	cond := c.nativeCondition("huge", metav1.ConditionFalse)
	if cond.Reason != schedulingv1beta1.PodGroupReasonUnschedulable || (!gatesOn && !strings.Contains(cond.Message, "needs 50")) {
		t.Errorf("huge's condition does not say what is short: %+v", cond)
	}
	c.waitForEvent(30*time.Second, "huge-0", "FluenceGroupRejected", "needs 50")
	c.waitForEvent(30*time.Second, "huge", "FluenceGroupRejected", "needs 50") // the PodGroup's own event
	time.Sleep(2 * time.Second)
	if n := c.boundCount(names(huge)...); n != 0 {
		t.Errorf("%d pods of an impossible group bound", n)
	}

	// Pods created before their PodGroup wait for it: fluence says so;
	// with the gate on, kube-scheduler's queue holds them until it exists.
	late := nativePods("late", 2, "1")
	c.createPods(late...)
	if !gatesOn {
		c.waitForEvent(30*time.Second, "late-1", "FailedScheduling", "PodGroup fluence-test/late (scheduling.k8s.io) not found")
	} else {
		time.Sleep(2 * time.Second)
		if n := c.boundCount(names(late)...); n != 0 {
			t.Errorf("%d pods bound before their PodGroup exists", n)
		}
	}
	c.createNativePodGroup("late", 2)
	c.waitForPodPhase(30*time.Second, corev1.PodSucceeded, names(late)...)
	c.nativeCondition("late", metav1.ConditionTrue)
	for _, line := range strings.Split(proc.logs.String(), "\n") {
		// kube-scheduler's own pod-group cycle (gates on) logs an error for
		// pods whose PodGroup does not exist yet; that is not fluence's.
		if gatesOn && strings.Contains(line, "schedule_one_podgroup.go") {
			continue
		}
		// kube-scheduler 1.37 says once, at start, that a profile without
		// its GangScheduling plugin leaves gang scheduling to others:
		// fluence's profile does so on purpose.
		if gatesOn && strings.Contains(line, "GangScheduling plugin is not set") {
			continue
		}
		if strings.HasPrefix(line, "E") && strings.Contains(strings.ToLower(line), "podgroup") {
			t.Errorf("the scheduler logged an error about PodGroups: %s", line)
		}
	}
}

// lineCapture keeps klog's lines while passing them on as before.
type lineCapture struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	next io.Writer
}

func (l *lineCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf.Write(p)
	l.mu.Unlock()
	return l.next.Write(p)
}

func (l *lineCapture) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(l.buf.String(), "\n")
}

// On an API server that does not serve Kubernetes PodGroups (1.37's
// default: GenericWorkload off), fluence never asks for them, says so once
// at start and logs no error or warning about them; a pod is a lone pod.
func TestNativePodGroupNotServed(t *testing.T) {
	if !klogQuiet {
		t.Skip("klog's output was configured by the user; this test reads it")
	}
	capture := &lineCapture{next: localcluster.ErrorsOnly{W: os.Stderr}}
	klog.SetOutput(capture)
	t.Cleanup(func() { klog.SetOutput(localcluster.ErrorsOnly{W: os.Stderr}) })

	c, inv, _, _ := startFluence(t, 2, "2", "4Gi", nil)
	pods := nativePods("solver", 2, "1") // spec.schedulingGroup is dropped: GenericWorkload is off
	c.createPods(pods...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(pods)...)
	c.checkInvariants(inv)
	said := false
	for _, line := range capture.lines() {
		// The API server itself warns that it skips the groups it serves
		// no resource of; fluence must not add to that.
		if strings.Contains(line, "scheduling.k8s.io") && (strings.HasPrefix(line, "E") || strings.HasPrefix(line, "W") && !strings.Contains(line, "genericapiserver.go")) {
			t.Errorf("logged an error or warning about the unserved API: %s", line)
		}
		said = said || strings.Contains(line, "Kubernetes gang API") && strings.Contains(line, "does not serve scheduling.k8s.io/v1beta1")
	}
	if !said {
		t.Error("fluence did not log at start which gang API it found")
	}
}
