package integration

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// nsDeleteBound is how long a namespace with pods and PodGroups may take to
// go with fluence down: the namespace controller's own pace (a pass, then
// a recheck of what is left), far below it on an idle machine.
const nsDeleteBound = 60 * time.Second

// With every fluence replica stopped (the chart's objects applied, no pod
// of its Deployment running, so no endpoint behind its Services), deleting
// a namespace holding pods and PodGroups of both APIs completes, and kubectl
// get of another namespace's PodGroups answers without a discovery error
// meanwhile, and so does discovery: with the chart's defaults nothing of
// the cluster depends on fluence. With the opt-in APIService the same
// namespace is stuck (NamespaceDeletionDiscoveryFailure) for as long as
// fluence is down, and client-go's discovery of every API fails; it goes
// once a replica serves again (here: once the APIService is removed).
// kubectl get of the PodGroups works either way.
func TestNamespaceDeletionWithFluenceDown(t *testing.T) {
	helm := helmBinary(t)
	kubectl := kubectlBinary(t)
	for _, tc := range []struct {
		name       string
		sets       []string
		apiService bool
	}{
		{"defaults", []string{"--set", "podGroupCRD.install=false"}, false},
		{"opt-in APIService", []string{"--set", "podGroupCRD.install=false", "--set", "inspect.apiService=true"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, localcluster.Options{GarbageCollector: true, FeatureGates: map[string]bool{"GenericWorkload": true}})
			c.installPodGroupCRD()
			if _, err := c.Client.CoreV1().Namespaces().Create(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			objs := renderChart(t, helm, tc.sets...)
			// The Deployment is there, but no controller makes its pods: every
			// replica is stopped, and its Services have no endpoints.
			c.apply(objs)
			native := c.servesNativePodGroups()
			t.Logf("scheduling.k8s.io/v1beta1 PodGroups served: %v", native)
			if tc.apiService {
				c.waitAPIServiceUnavailable("v1alpha1." + inspect.GroupName)
			}

			keep, doomed := "keep", "doomed"
			for _, ns := range []string{keep, doomed} {
				c.fillNamespace(ns, native)
			}
			kubeconfig := c.kubeconfigFile()

			start := time.Now()
			if err := c.Client.CoreV1().Namespaces().Delete(c.Ctx, doomed, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// Meanwhile, kubectl get of the other namespace's groups.
			for _, resource := range c.podGroupResources(native) {
				out, stderr, err := runKubectl(kubectl, kubeconfig, "get", resource, "-n", keep, "-o", "name")
				t.Logf("$ kubectl get %s -n %s (while %s is deleted)\n%s%s", resource, keep, doomed, out, stderr)
				if err != nil || strings.Count(out, "\n") != 2 {
					t.Errorf("kubectl get %s -n %s: %v, want the two groups:\n%s%s", resource, keep, err, out, stderr)
				}
				if strings.Contains(stderr, inspect.GroupName) && !tc.apiService {
					t.Errorf("kubectl get %s: a discovery error for %s without the APIService:\n%s", resource, inspect.GroupName, stderr)
				}
			}
			// kubectl 1.37 reads aggregated discovery and passes over a stale
			// group without a word; client-go's full discovery, which the
			// namespace controller and the garbage collector use, fails.
			_, stderr, err := runKubectl(kubectl, kubeconfig, "api-resources", "-o", "name")
			t.Logf("$ kubectl api-resources: %v %s", err, stderr)
			_, err = discovery.NewDiscoveryClientForConfigOrDie(c.Config).ServerPreferredNamespacedResources()
			t.Logf("discovery of namespaced resources: %v", err)
			var failed *discovery.ErrGroupDiscoveryFailed
			if got := errors.As(err, &failed); got != tc.apiService {
				t.Errorf("discovery failed for a group: %v (%v), want %v", got, err, tc.apiService)
			}

			if !tc.apiService {
				if err := c.waitNamespaceGone(doomed, nsDeleteBound); err != nil {
					t.Fatal(err)
				}
				t.Logf("namespace %s with pods and PodGroups deleted in %.1f s with every fluence replica stopped", doomed, time.Since(start).Seconds())
				c.requireNamespaceIntact(keep, native)
				return
			}

			// The hazard: stuck, and saying why.
			cond := c.waitNamespaceCondition(doomed, corev1.NamespaceDeletionDiscoveryFailure, nsDeleteBound)
			t.Logf("after %.1f s namespace %s is stuck: %s %s: %s", time.Since(start).Seconds(), doomed, cond.Type, cond.Reason, cond.Message)
			if !strings.Contains(cond.Message, inspect.GroupName) {
				t.Errorf("the condition names no %s: %s", inspect.GroupName, cond.Message)
			}
			// Still there after another pass of the namespace controller.
			stuck := 10 * time.Second
			if err := c.waitNamespaceGone(doomed, stuck); err == nil {
				t.Fatalf("namespace %s went although the APIService is unavailable", doomed)
			}
			t.Logf("still Terminating %.1f s after the delete", time.Since(start).Seconds())
			// Once the unavailable group is gone (a replica ready would do
			// the same), the deletion completes.
			if err := aggregatorclient.NewForConfigOrDie(c.Config).ApiregistrationV1().APIServices().Delete(c.Ctx, "v1alpha1."+inspect.GroupName, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			released := time.Now()
			if err := c.waitNamespaceGone(doomed, nsDeleteBound); err != nil {
				t.Fatal(err)
			}
			t.Logf("namespace %s gone %.1f s after the APIService was removed", doomed, time.Since(released).Seconds())
			c.requireNamespaceIntact(keep, native)
		})
	}
}

// servesNativePodGroups reports whether the API server serves Kubernetes
// PodGroups (scheduling.k8s.io/v1beta1).
func (c *cluster) servesNativePodGroups() bool {
	_, err := c.Client.SchedulingV1beta1().PodGroups(metav1.NamespaceDefault).List(c.Ctx, metav1.ListOptions{})
	return err == nil
}

// podGroupResources names the PodGroup resources of the cluster as kubectl
// takes them.
func (c *cluster) podGroupResources(native bool) []string {
	out := []string{"podgroups.scheduling.x-k8s.io"}
	if native {
		out = append(out, "podgroups.scheduling.k8s.io")
	}
	return out
}

// fillNamespace creates the namespace with what fluence's users put there:
// two scheduler-plugins PodGroups and, when served, two Kubernetes ones,
// and their pods, Pending (no fluence to place them).
func (c *cluster) fillNamespace(ns string, native bool) {
	c.t.Helper()
	if _, err := c.Client.CoreV1().Namespaces().Create(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(c.Config)
	var pods []*corev1.Pod
	for i := range 2 {
		name := fmt.Sprintf("pg%d", i)
		pg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"minMember": int64(2)},
		}}
		if _, err := dyn.Resource(podGroupGVR).Namespace(ns).Create(c.Ctx, pg, metav1.CreateOptions{}); err != nil {
			c.t.Fatal(err)
		}
		pods = append(pods, podGroupMembers(name, 2, "1")...)
		if native {
			nname := fmt.Sprintf("native%d", i)
			npg := &schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Name: nname, Namespace: ns},
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}}},
			}
			if _, err := c.Client.SchedulingV1beta1().PodGroups(ns).Create(c.Ctx, npg, metav1.CreateOptions{}); err != nil {
				c.t.Fatal(err)
			}
			pods = append(pods, nativePods(nname, 2, "1")...)
		}
	}
	for _, p := range pods {
		p.Namespace = ns
	}
	c.createPods(pods...)
}

// requireNamespaceIntact checks that the namespace still holds its pods
// and PodGroups.
func (c *cluster) requireNamespaceIntact(ns string, native bool) {
	c.t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(c.Ctx, metav1.ListOptions{})
	want := 4
	if native {
		want = 8
	}
	if err != nil || len(pods.Items) != want {
		c.t.Errorf("namespace %s: %v pods (%v), want %d", ns, len(pods.Items), err, want)
	}
	pgs, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(ns).List(c.Ctx, metav1.ListOptions{})
	if err != nil || len(pgs.Items) != 2 {
		c.t.Errorf("namespace %s: PodGroups %v (%v), want 2", ns, pgs, err)
	}
}

// waitNamespaceGone waits until the namespace no longer exists.
func (c *cluster) waitNamespaceGone(ns string, timeout time.Duration) error {
	var last *corev1.Namespace
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		last = got
		return false, nil
	})
	if err != nil {
		var conds []string
		if last != nil {
			for _, cond := range last.Status.Conditions {
				if cond.Status == corev1.ConditionTrue {
					conds = append(conds, fmt.Sprintf("%s: %s", cond.Type, cond.Message))
				}
			}
		}
		return fmt.Errorf("namespace %s still there after %v: %s", ns, timeout, strings.Join(conds, "; "))
	}
	return nil
}

// waitNamespaceCondition waits until the namespace has the condition, true,
// and returns it.
func (c *cluster) waitNamespaceCondition(ns string, typ corev1.NamespaceConditionType, timeout time.Duration) corev1.NamespaceCondition {
	c.t.Helper()
	var found corev1.NamespaceCondition
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == typ && cond.Status == corev1.ConditionTrue {
				found = cond
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("namespace %s has no condition %s within %v", ns, typ, timeout)
	}
	return found
}

// waitAPIServiceUnavailable waits until the aggregation layer has found the
// APIService unavailable (no endpoint behind its Service).
func (c *cluster) waitAPIServiceUnavailable(name string) {
	c.t.Helper()
	client := aggregatorclient.NewForConfigOrDie(c.Config).ApiregistrationV1().APIServices()
	var last string
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range svc.Status.Conditions {
			if cond.Type == apiregistrationv1.Available {
				last = fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
				return cond.Status == apiregistrationv1.ConditionFalse, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("APIService %s not found unavailable within 30 s: %s", name, last)
	}
	c.t.Logf("APIService %s: Available %s", name, last)
}

// runKubectl runs kubectl with the kubeconfig and returns its output and
// its error output apart.
func runKubectl(kubectl, kubeconfig string, args ...string) (string, string, error) {
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}
