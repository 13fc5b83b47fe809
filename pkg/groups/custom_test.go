package groups

import (
	"context"
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// resolverOver returns a Resolver reading jobs and c.
func resolverOver(t *testing.T, c *CustomResources, jobs ...*batchv1.Job) *Resolver {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, j := range jobs {
		if err := idx.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	stsIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	return NewResolver(Sources{Jobs: batchlisters.NewJobLister(idx), StatefulSets: appslisters.NewStatefulSetLister(stsIdx), Custom: c})
}

// resourcesTouched returns the resources the fake dynamic client was
// asked anything about.
func resourcesTouched(dyn *dynamicfake.FakeDynamicClient) map[schema.GroupVersionResource][]string {
	out := map[schema.GroupVersionResource][]string{}
	for _, a := range dyn.Actions() {
		out[a.GetResource()] = append(out[a.GetResource()], a.GetVerb())
	}
	return out
}

// wantRetryable resolves pod and checks the error is retryable and
// contains each of has.
func wantRetryable(t *testing.T, r *Resolver, pod *corev1.Pod, has ...string) {
	t.Helper()
	got, err := r.Resolve(context.Background(), pod)
	var re *ResolveError
	if !errors.As(err, &re) {
		t.Fatalf("Resolve(%s) = %+v, %v; want a *ResolveError", pod.Name, got, err)
	}
	if !re.Retryable {
		t.Errorf("Resolve(%s): %v is not retryable", pod.Name, err)
	}
	for _, s := range has {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("Resolve(%s): error %q does not contain %q", pod.Name, err, s)
		}
	}
}

// Only what the API server serves is listed and watched; a resource that
// appears is watched from the next discovery check, and one that goes is
// no longer watched.
func TestCustomResourcesFollowDiscovery(t *testing.T) {
	disc := fakeDiscovery(PodGroupResource)
	c, dyn := customResources(t, disc, testJobSet("js", "workers", 2))
	r := resolverOver(t, c, testJob("js-workers-0", 2, jobOwner("jobset.x-k8s.io/v1alpha2", "JobSet", "js")))
	pod := testPod("p", podOwner("batch/v1", "Job", "js-workers-0"), podLabels(JobSetReplicatedJobLabel, "workers"))

	touched := resourcesTouched(dyn)
	if len(touched) != 1 || len(touched[PodGroupResource]) == 0 {
		t.Fatalf("resources listed or watched: %v; want only PodGroups", touched)
	}
	// A JobSet that is not served: retryable, and discovery is asked
	// again soon.
	wantRetryable(t, r, pod, "JobSet ns1/js not found", "does not serve jobsets.jobset.x-k8s.io/v1alpha2")
	select {
	case <-c.nudge:
	default:
		t.Error("a lookup of a resource not served did not bring the discovery check forward")
	}
	if got := resourcesTouched(dyn); len(got) != 1 {
		t.Fatalf("resources touched after the lookup: %v", got)
	}

	// The JobSet CRD appears.
	serve(disc, PodGroupResource, JobSetResource)
	c.refresh(t.Context())
	c.mu.Lock()
	w := c.running[JobSetResource]
	c.mu.Unlock()
	if w == nil {
		t.Fatal("no JobSet informer after the JobSet CRD appeared")
	}
	waitSynced(t, w.inf.HasSynced)
	got, err := r.Resolve(context.Background(), pod)
	if want := gang.NewGroupID(testNS, "js-workers", 4, gang.SourceJobSet); err != nil || got != want {
		t.Fatalf("after the CRD appeared: %+v, %v; want %+v", got, err, want)
	}
	if !c.Synced() {
		t.Error("Synced is false")
	}

	// The PodGroup CRD goes.
	serve(disc, JobSetResource)
	c.refresh(t.Context())
	c.mu.Lock()
	_, running := c.running[PodGroupResource]
	c.mu.Unlock()
	if running {
		t.Fatal("the PodGroup informer still runs after its CRD went")
	}
	wantRetryable(t, r, testPod("q", podLabels("scheduling.x-k8s.io/pod-group", "pg")),
		"PodGroup ns1/pg not found", "does not serve podgroups.scheduling.x-k8s.io/v1alpha1")
	if !c.Synced() {
		t.Error("Synced is false after an informer stopped")
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// Nothing not yet listed counts as absent: before the first discovery
// check, and while an informer has not synced, lookups are retryable "not
// in the informer cache yet" and Synced is false.
func TestCustomResourcesBeforeSync(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, testMPIJob("pi", 3, true))
	release := make(chan struct{})
	dyn.PrependReactor("list", "mpijobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	c := NewCustomResources(dyn, fakeDiscovery(watched...), klog.Background())
	r := resolverOver(t, c)
	pod := testPod("pi-worker-0", podOwner("kubeflow.org/v2beta1", "MPIJob", "pi"))

	if c.Synced() {
		t.Error("Synced before the first discovery check")
	}
	wantRetryable(t, r, pod, "MPIJob ns1/pi is not in the informer cache yet")
	select {
	case <-c.nudge:
		t.Error("a lookup before the first check brought a discovery check forward")
	default:
	}

	c.refresh(t.Context())
	if c.Synced() {
		t.Error("Synced while the MPIJob list is held")
	}
	wantRetryable(t, r, pod, "MPIJob ns1/pi is not in the informer cache yet")

	close(release)
	waitSynced(t, c.Synced)
	got, err := r.Resolve(context.Background(), pod)
	if want := gang.NewGroupID(testNS, "pi", 4, gang.SourceMPIJob); err != nil || got != want {
		t.Fatalf("after sync: %+v, %v; want %+v", got, err, want)
	}
}

// A discovery check that fails starts nothing and keeps nothing waiting;
// the next one that succeeds starts the informers.
func TestCustomResourcesDiscoveryError(t *testing.T) {
	disc := fakeDiscovery(watched...)
	fail := true
	disc.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, testPodGroup("pg", 3))
	c := NewCustomResources(dyn, disc, klog.Background())
	c.refresh(t.Context())
	if !c.Synced() {
		t.Error("a failed first check keeps Synced false")
	}
	if got := resourcesTouched(dyn); len(got) != 0 {
		t.Fatalf("resources touched after a failed discovery check: %v", got)
	}
	fail = false
	c.refresh(t.Context())
	waitSynced(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		w := c.running[PodGroupResource]
		return w != nil && w.inf.HasSynced()
	})
	got, err := resolverOver(t, c).Resolve(context.Background(), testPod("p", podLabels("scheduling.x-k8s.io/pod-group", "pg")))
	if want := gang.NewGroupID(testNS, "pg", 3, gang.SourcePodGroup); err != nil || got != want {
		t.Fatalf("%+v, %v; want %+v", got, err, want)
	}
}
