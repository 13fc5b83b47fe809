package groups

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

const testNS = "ns1"

// ---- builders ----

type podOpt func(*corev1.Pod)

func testPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-pod-" + name)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func podLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) { p.Labels = addPairs(p.Labels, kv) }
}

func podAnnotations(kv ...string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = addPairs(p.Annotations, kv) }
}

func podOwner(apiVersion, kind, name string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, controllerRef(apiVersion, kind, name))
	}
}

func addPairs(m map[string]string, kv []string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func controllerRef(apiVersion, kind, name string) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + strings.ToLower(kind) + "-" + name), Controller: &t}
}

type jobOpt func(*batchv1.Job)

func testJob(name string, parallelism int32, opts ...jobOpt) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-job-" + name)},
		Spec:       batchv1.JobSpec{Parallelism: &parallelism},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

func completions(n int32) jobOpt {
	return func(j *batchv1.Job) { j.Spec.Completions = &n }
}

func jobLabels(kv ...string) jobOpt {
	return func(j *batchv1.Job) { j.Labels = addPairs(j.Labels, kv) }
}

func jobOwner(apiVersion, kind, name string) jobOpt {
	return func(j *batchv1.Job) {
		j.OwnerReferences = append(j.OwnerReferences, controllerRef(apiVersion, kind, name))
	}
}

// testStatefulSet creates its pods together (Parallel), as a gang needs.
func testStatefulSet(name string, replicas int32, labels ...string) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-statefulset-" + name)},
		Spec:       appsv1.StatefulSetSpec{Replicas: &replicas, PodManagementPolicy: appsv1.ParallelPodManagement},
	}
	if len(labels) > 0 {
		s.Labels = addPairs(nil, labels)
	}
	return s
}

func orderedReady(s *appsv1.StatefulSet) *appsv1.StatefulSet {
	s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	return s
}

func unstructuredObj(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(testNS)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + strings.ToLower(kind) + "-" + name))
	return u
}

func testPodGroup(name string, minMember int64) *unstructured.Unstructured {
	return unstructuredObj("scheduling.x-k8s.io/v1alpha1", "PodGroup", name, map[string]any{"minMember": minMember})
}

// testJobSet builds a JobSet; replicated jobs are name, replicas pairs.
func testJobSet(name string, rjs ...any) *unstructured.Unstructured {
	var list []any
	for i := 0; i+1 < len(rjs); i += 2 {
		list = append(list, map[string]any{"name": rjs[i], "replicas": int64(rjs[i+1].(int))})
	}
	return unstructuredObj("jobset.x-k8s.io/v1alpha2", "JobSet", name, map[string]any{"replicatedJobs": list})
}

func testMPIJob(name string, workers int64, launcher bool) *unstructured.Unstructured {
	specs := map[string]any{"Worker": map[string]any{"replicas": workers}}
	if launcher {
		specs["Launcher"] = map[string]any{} // replicas default 1
	}
	return unstructuredObj("kubeflow.org/v2beta1", "MPIJob", name, map[string]any{"mpiReplicaSpecs": specs})
}

type fixture struct {
	jobs []*batchv1.Job
	sts  []*appsv1.StatefulSet
	crs  []runtime.Object
	// noDynamic leaves Sources.Custom nil.
	noDynamic bool
}

// listKinds lets the fake dynamic client list the watched resources.
var listKinds = map[schema.GroupVersionResource]string{
	PodGroupResource:          "PodGroupList",
	JobSetResource:            "JobSetList",
	MPIJobResource:            "MPIJobList",
	NativePodGroupV1beta1:     "PodGroupList",
	VolcanoPodGroupResource:   "PodGroupList",
	CompositePodGroupV1alpha3: "CompositePodGroupList",
}

// fakeDiscovery serves the given resources.
func fakeDiscovery(served ...schema.GroupVersionResource) *discoveryfake.FakeDiscovery {
	d := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	serve(d, served...)
	return d
}

// serve sets what d serves; not safe while a discovery check runs.
func serve(d *discoveryfake.FakeDiscovery, served ...schema.GroupVersionResource) {
	d.Resources = nil
	for _, gvr := range served {
		d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: gvr.GroupVersion().String(),
			APIResources: []metav1.APIResource{{Name: gvr.Resource, Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}}}})
	}
}

// customResources returns CustomResources over a fake dynamic client
// holding objs, after a first discovery check that finds served; it waits
// until the informers it started have synced.
func customResources(t *testing.T, d *discoveryfake.FakeDiscovery, objs ...runtime.Object) (*CustomResources, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	c := NewCustomResources(dyn, d, klog.Background())
	c.refresh(t.Context())
	waitSynced(t, c.Synced)
	return c, dyn
}

func waitSynced(t *testing.T, synced func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 2*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return synced(), nil
	})
	if err != nil {
		t.Fatal("informers did not sync")
	}
}

func (f fixture) resolver(t *testing.T) (*Resolver, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	newIndexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	jobIdx, stsIdx := newIndexer(), newIndexer()
	for _, j := range f.jobs {
		if err := jobIdx.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range f.sts {
		if err := stsIdx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	src := Sources{
		Jobs:         batchlisters.NewJobLister(jobIdx),
		StatefulSets: appslisters.NewStatefulSetLister(stsIdx),
	}
	var dyn *dynamicfake.FakeDynamicClient
	if !f.noDynamic {
		src.Custom, dyn = customResources(t, fakeDiscovery(watched...), f.crs...)
	}
	return NewResolver(src), dyn
}

func want(name string, size int32, source string) gang.GroupID {
	return gang.NewGroupID(testNS, name, size, source)
}

// ---- tests ----

func TestResolve(t *testing.T) {
	const (
		pgKey   = "fluence.flux-framework.org/pod-group"
		oldKey  = "fluence.flux-framework.org/group"
		sizeKey = "fluence.flux-framework.org/group-size"
		schedPG = "scheduling.x-k8s.io/pod-group"
		legacy  = "fluence.group-size"
	)
	var (
		ownJob  = func(n string) podOpt { return podOwner("batch/v1", "Job", n) }
		ownSts  = func(n string) podOpt { return podOwner("apps/v1", "StatefulSet", n) }
		ownMPI  = func(n string) podOpt { return podOwner("kubeflow.org/v2beta1", "MPIJob", n) }
		byJS    = func(n string) jobOpt { return jobOwner("jobset.x-k8s.io/v1alpha2", "JobSet", n) }
		byMPI   = func(n string) jobOpt { return jobOwner("kubeflow.org/v2beta1", "MPIJob", n) }
		byMC    = func(n string) jobOpt { return jobOwner("flux-framework.org/v1alpha2", "MiniCluster", n) }
		rjLabel = func(rj string) podOpt { return podLabels(JobSetReplicatedJobLabel, rj) }
	)

	tests := []struct {
		name string
		pod  *corev1.Pod
		fx   fixture
		want gang.GroupID
		// When errHas is set an error is expected, containing each string.
		errHas    []string
		retryable bool
	}{
		// Rule 1: labels on the pod.
		{
			name: "pod-group label with size",
			pod:  testPod("p", podLabels(pgKey, "g1", sizeKey, "4")),
			want: want("g1", 4, gang.SourceLabel),
		},
		{
			name: "kueue plain-pod group: label and total-count annotation",
			pod:  testPod("p", podLabels("kueue.x-k8s.io/pod-group-name", "solver-7", "kueue.x-k8s.io/queue-name", "q"), podAnnotations("kueue.x-k8s.io/pod-group-total-count", "4")),
			want: want("solver-7", 4, gang.SourceLabel),
		},
		{
			name:   "kueue plain-pod group without its count",
			pod:    testPod("p", podLabels("kueue.x-k8s.io/pod-group-name", "solver-7")),
			errHas: []string{"kueue.x-k8s.io/pod-group-name names a Kueue pod group without the annotation kueue.x-k8s.io/pod-group-total-count"},
		},
		{
			name: "older group label with size in annotation",
			pod:  testPod("p", podLabels(oldKey, "g2"), podAnnotations(sizeKey, "3")),
			want: want("g2", 3, gang.SourceLabel),
		},
		{
			name: "scheduling pod-group with legacy size",
			pod:  testPod("p", podLabels(schedPG, "g3", legacy, "7")),
			want: want("g3", 7, gang.SourceLabel),
		},
		{
			name: "labels win over owner",
			pod:  testPod("p", podLabels(pgKey, "g1", sizeKey, "2"), ownJob("j")),
			fx:   fixture{jobs: []*batchv1.Job{testJob("j", 8)}},
			want: want("g1", 2, gang.SourceLabel),
		},
		{
			name:   "malformed size abc",
			pod:    testPod("bad", podLabels(pgKey, "g", sizeKey, "abc")),
			errHas: []string{"ns1/bad", sizeKey, `"abc"`},
		},
		{
			name:   "malformed size 0",
			pod:    testPod("bad", podLabels(pgKey, "g", sizeKey, "0")),
			errHas: []string{"ns1/bad", sizeKey, `"0"`},
		},
		{
			name:   "malformed size -1",
			pod:    testPod("bad", podLabels(pgKey, "g", sizeKey, "-1")),
			errHas: []string{"ns1/bad", sizeKey, `"-1"`},
		},
		{
			name:   "malformed legacy size",
			pod:    testPod("bad", podLabels(schedPG, "g", legacy, "x1")),
			errHas: []string{"ns1/bad", legacy, `"x1"`},
		},
		{
			name: "name without size takes the owning job's size",
			pod:  testPod("p", podLabels(pgKey, "g4"), ownJob("j")),
			fx:   fixture{jobs: []*batchv1.Job{testJob("j", 6)}},
			want: want("g4", 6, gang.SourceLabel),
		},
		{
			name:   "name without size and no owner",
			pod:    testPod("p", podLabels(pgKey, "g5")),
			errHas: []string{"ns1/p", pgKey, `"g5"`, "gives no size", "no owning workload"},
		},
		{
			name:   "name without size, owner is a ReplicaSet",
			pod:    testPod("p", podLabels(oldKey, "g5"), podOwner("apps/v1", "ReplicaSet", "rs")),
			errHas: []string{"ns1/p", oldKey, "no owning workload", "ReplicaSet"},
		},
		{
			name:      "name without size, owning job not cached",
			pod:       testPod("p", podLabels(pgKey, "g6"), ownJob("j")),
			errHas:    []string{"job ns1/j", "not in the informer cache"},
			retryable: true,
		},

		// Rule 1: PodGroup.
		{
			name: "PodGroup minMember 4",
			pod:  testPod("p", podLabels(schedPG, "pg")),
			fx:   fixture{crs: []runtime.Object{testPodGroup("pg", 4)}},
			want: want("pg", 4, gang.SourcePodGroup),
		},
		{
			name:      "PodGroup missing",
			pod:       testPod("p", podLabels(schedPG, "nope")),
			errHas:    []string{"PodGroup ns1/nope not found"},
			retryable: true,
		},
		{
			name:   "PodGroup minMember 0",
			pod:    testPod("p", podLabels(schedPG, "pg")),
			fx:     fixture{crs: []runtime.Object{testPodGroup("pg", 0)}},
			errHas: []string{"PodGroup ns1/pg", "minMember"},
		},
		{
			name:   "PodGroup without minMember",
			pod:    testPod("p", podLabels(schedPG, "pg")),
			fx:     fixture{crs: []runtime.Object{unstructuredObj("scheduling.x-k8s.io/v1alpha1", "PodGroup", "pg", map[string]any{})}},
			errHas: []string{"PodGroup ns1/pg has no spec.minMember"},
		},
		{
			name: "PodGroup without dynamic client: owning job's size",
			pod:  testPod("p", podLabels(schedPG, "pg"), ownJob("j")),
			fx:   fixture{noDynamic: true, jobs: []*batchv1.Job{testJob("j", 3)}},
			want: want("pg", 3, gang.SourceLabel),
		},

		// Rule 2: Jobs.
		{
			name: "job parallelism 3",
			pod:  testPod("p", ownJob("train")),
			fx:   fixture{jobs: []*batchv1.Job{testJob("train", 3)}},
			want: want("train", 3, gang.SourceJob),
		},
		{
			// Waves of independent tasks: each pod is a group of its own,
			// not one group of size 1 that would run a pod at a time.
			name: "job with more completions than parallelism",
			pod:  testPod("p", ownJob("sweep")),
			fx:   fixture{jobs: []*batchv1.Job{testJob("sweep", 5, completions(20))}},
			want: want("p", 1, gang.SourcePod),
		},
		{
			name: "job with group labels",
			pod:  testPod("p", ownJob("train")),
			fx:   fixture{jobs: []*batchv1.Job{testJob("train", 3, jobLabels(pgKey, "jg", sizeKey, "5"))}},
			want: want("jg", 5, gang.SourceWorkloadLabel),
		},
		{
			name: "job with group name only",
			pod:  testPod("p", ownJob("train")),
			fx:   fixture{jobs: []*batchv1.Job{testJob("train", 3, jobLabels(pgKey, "jg"))}},
			want: want("jg", 3, gang.SourceWorkloadLabel),
		},
		{
			name:   "job with malformed group size",
			pod:    testPod("p", ownJob("train")),
			fx:     fixture{jobs: []*batchv1.Job{testJob("train", 3, jobLabels(pgKey, "jg", sizeKey, "abc"))}},
			errHas: []string{"ns1/p", "job ns1/train", sizeKey, `"abc"`},
		},
		{
			name:      "job missing from lister",
			pod:       testPod("p", ownJob("gone")),
			errHas:    []string{"ns1/p", "job ns1/gone", "not in the informer cache"},
			retryable: true,
		},
		{
			name: "job in another namespace is not found",
			pod:  testPod("p", ownJob("train")),
			fx: fixture{jobs: []*batchv1.Job{func() *batchv1.Job {
				j := testJob("train", 3)
				j.Namespace = "other"
				return j
			}()}},
			errHas:    []string{"job ns1/train"},
			retryable: true,
		},
		{
			name: "job recreated under the same name",
			pod:  testPod("p", ownJob("train")),
			fx: fixture{jobs: []*batchv1.Job{func() *batchv1.Job {
				j := testJob("train", 3)
				j.UID = "new-uid"
				return j
			}()}},
			errHas:    []string{"job ns1/train", "uid"},
			retryable: true,
		},

		// JobSet.
		{
			name: "jobset 2 replicas x parallelism 2",
			pod:  testPod("p", ownJob("js-workers-0"), rjLabel("workers")),
			fx: fixture{
				jobs: []*batchv1.Job{testJob("js-workers-0", 2, byJS("js"))},
				crs:  []runtime.Object{testJobSet("js", "driver", 1, "workers", 2)},
			},
			want: want("js-workers", 4, gang.SourceJobSet),
		},
		{
			name: "jobset replicated job label on the job only",
			pod:  testPod("p", ownJob("js-driver-0")),
			fx: fixture{
				jobs: []*batchv1.Job{testJob("js-driver-0", 1, byJS("js"), jobLabels(JobSetReplicatedJobLabel, "driver"))},
				crs:  []runtime.Object{testJobSet("js", "driver", 1, "workers", 2)},
			},
			want: want("js-driver", 1, gang.SourceJobSet),
		},
		{
			name: "jobset with group labels",
			pod:  testPod("p", ownJob("js-workers-0"), rjLabel("workers")),
			fx: fixture{
				jobs: []*batchv1.Job{testJob("js-workers-0", 2, byJS("js"))},
				crs: []runtime.Object{func() runtime.Object {
					js := testJobSet("js", "workers", 2)
					js.SetLabels(map[string]string{pgKey: "all", sizeKey: "9"})
					return js
				}()},
			},
			want: want("all", 9, gang.SourceWorkloadLabel),
		},
		{
			name:      "jobset missing",
			pod:       testPod("p", ownJob("js-workers-0"), rjLabel("workers")),
			fx:        fixture{jobs: []*batchv1.Job{testJob("js-workers-0", 2, byJS("js"))}},
			errHas:    []string{"JobSet ns1/js not found"},
			retryable: true,
		},
		{
			name: "jobset unknown replicated job",
			pod:  testPod("p", ownJob("js-x-0"), rjLabel("x")),
			fx: fixture{
				jobs: []*batchv1.Job{testJob("js-x-0", 2, byJS("js"))},
				crs:  []runtime.Object{testJobSet("js", "workers", 2)},
			},
			errHas: []string{"JobSet ns1/js", `"x"`},
		},
		{
			name:   "jobset without replicated job label",
			pod:    testPod("p", ownJob("js-workers-0")),
			fx:     fixture{jobs: []*batchv1.Job{testJob("js-workers-0", 2, byJS("js"))}, crs: []runtime.Object{testJobSet("js", "workers", 2)}},
			errHas: []string{"JobSet ns1/js", JobSetReplicatedJobLabel},
		},
		{
			name: "jobset without dynamic client falls back to the job",
			pod:  testPod("p", ownJob("js-workers-0"), rjLabel("workers")),
			fx:   fixture{noDynamic: true, jobs: []*batchv1.Job{testJob("js-workers-0", 2, byJS("js"))}},
			want: want("js-workers-0", 2, gang.SourceJob),
		},

		// MPIJob: worker and launcher share a key.
		{
			name: "mpijob worker",
			pod:  testPod("pi-worker-0", ownMPI("pi")),
			fx:   fixture{crs: []runtime.Object{testMPIJob("pi", 3, true)}},
			want: want("pi", 4, gang.SourceMPIJob),
		},
		{
			name: "mpijob launcher via its job",
			pod:  testPod("pi-launcher-xyz", ownJob("pi-launcher")),
			fx: fixture{
				jobs: []*batchv1.Job{testJob("pi-launcher", 1, byMPI("pi"))},
				crs:  []runtime.Object{testMPIJob("pi", 3, true)},
			},
			want: want("pi", 4, gang.SourceMPIJob),
		},
		{
			name: "mpijob without launcher",
			pod:  testPod("pi-worker-0", ownMPI("pi")),
			fx:   fixture{crs: []runtime.Object{testMPIJob("pi", 3, false)}},
			want: want("pi", 3, gang.SourceMPIJob),
		},
		{
			name:      "mpijob missing",
			pod:       testPod("pi-worker-0", ownMPI("pi")),
			errHas:    []string{"MPIJob ns1/pi not found"},
			retryable: true,
		},
		{
			name: "mpijob worker without dynamic client is lone",
			pod:  testPod("pi-worker-0", ownMPI("pi")),
			fx:   fixture{noDynamic: true},
			want: want("pi-worker-0", 1, gang.SourcePod),
		},

		// MiniCluster.
		{
			name: "minicluster job",
			pod:  testPod("flux-0", ownJob("flux")),
			fx:   fixture{jobs: []*batchv1.Job{testJob("flux", 4, byMC("flux"))}},
			want: want("flux", 4, gang.SourceMiniCluster),
		},

		// StatefulSet.
		{
			name: "statefulset replicas 5",
			pod:  testPod("db-0", ownSts("db")),
			fx:   fixture{sts: []*appsv1.StatefulSet{testStatefulSet("db", 5)}},
			want: want("db", 5, gang.SourceStatefulSet),
		},
		{
			// One pod at a time: a gang of 5 would never form.
			name: "statefulset OrderedReady: each pod alone",
			pod:  testPod("db-0", ownSts("db")),
			fx:   fixture{sts: []*appsv1.StatefulSet{orderedReady(testStatefulSet("db", 5))}},
			want: want("db-0", 1, gang.SourcePod),
		},
		{
			name: "statefulset with group labels",
			pod:  testPod("db-0", ownSts("db")),
			fx:   fixture{sts: []*appsv1.StatefulSet{testStatefulSet("db", 5, oldKey, "dbg", sizeKey, "2")}},
			want: want("dbg", 2, gang.SourceWorkloadLabel),
		},
		{
			name:      "statefulset missing",
			pod:       testPod("db-0", ownSts("db")),
			errHas:    []string{"statefulset ns1/db"},
			retryable: true,
		},

		// Lone pods.
		{
			name: "replicaset-owned pod is lone",
			pod:  testPod("web-abc", podOwner("apps/v1", "ReplicaSet", "web")),
			want: want("web-abc", 1, gang.SourcePod),
		},
		{
			name: "no owner is lone",
			pod:  testPod("solo"),
			want: want("solo", 1, gang.SourcePod),
		},
		{
			name: "non-controller owner is lone",
			pod: testPod("solo", func(p *corev1.Pod) {
				ref := controllerRef("batch/v1", "Job", "j")
				ref.Controller = nil
				p.OwnerReferences = []metav1.OwnerReference{ref}
			}),
			fx:   fixture{jobs: []*batchv1.Job{testJob("j", 3)}},
			want: want("solo", 1, gang.SourcePod),
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := tc.fx.resolver(t)
			got, err := r.Resolve(context.Background(), tc.pod)
			if tc.errHas == nil {
				if err != nil {
					t.Fatalf("Resolve: unexpected error %v", err)
				}
				if got != tc.want {
					t.Fatalf("Resolve = %+v, want %+v", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Resolve = %+v, want an error", got)
			}
			var re *ResolveError
			if !errors.As(err, &re) {
				t.Fatalf("error %T %v is not a *ResolveError", err, err)
			}
			if re.Retryable != tc.retryable {
				t.Errorf("Retryable = %v, want %v (%v)", re.Retryable, tc.retryable, err)
			}
			if re.Pod != testNS+"/"+tc.pod.Name {
				t.Errorf("Pod = %q, want %q", re.Pod, testNS+"/"+tc.pod.Name)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err.Error(), s)
				}
			}
		})
	}
}

// PodGroups come from the informer: never a GET, changes seen as the watch
// delivers them, a PodGroup created after its pods seen once it arrives.
func TestResolvePodGroupInformer(t *testing.T) {
	r, dyn := fixture{crs: []runtime.Object{testPodGroup("pg", 4)}}.resolver(t)
	ctx := context.Background()
	pod := func(name, group string) *corev1.Pod {
		return testPod(name, podLabels("scheduling.x-k8s.io/pod-group", group))
	}
	resolve := func(step string, p *corev1.Pod, wantSize int32) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got, err := r.Resolve(ctx, p)
			if err != nil {
				var re *ResolveError
				if !errors.As(err, &re) || !re.Retryable {
					return false, err
				}
				return false, nil
			}
			if got.Key != testNS+"/"+p.Labels["scheduling.x-k8s.io/pod-group"] || got.Source != gang.SourcePodGroup {
				return false, fmt.Errorf("got %+v", got)
			}
			return got.Size == wantSize, nil
		})
		if err != nil {
			t.Fatalf("%s: want size %d: %v", step, wantSize, err)
		}
	}
	watching := func() {
		t.Helper()
		// The fake's watch misses what happens before it is registered.
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			for _, a := range dyn.Actions() {
				if a.GetVerb() == "watch" && a.GetResource() == PodGroupResource {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatal("no PodGroup watch")
		}
	}

	resolve("first", pod("a", "pg"), 4)
	resolve("second pod, same group", pod("b", "pg"), 4)

	watching()
	if _, err := dyn.Resource(PodGroupResource).Namespace(testNS).Update(ctx, testPodGroup("pg", 6), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	resolve("after the update", pod("c", "pg"), 6)

	// A PodGroup that does not exist yet is a retryable error; once
	// created it is seen.
	missing := pod("f", "later")
	_, err := r.Resolve(ctx, missing)
	var re *ResolveError
	if !errors.As(err, &re) || !re.Retryable || !strings.Contains(err.Error(), "PodGroup ns1/later not found") {
		t.Fatalf("missing PodGroup: got %v, want a retryable not found", err)
	}
	if _, err := dyn.Resource(PodGroupResource).Namespace(testNS).Create(ctx, testPodGroup("later", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resolve("created", missing, 2)

	for _, a := range dyn.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("the resolver read %s %s/%s from the API server", a.GetResource().Resource, a.GetNamespace(), a.(clienttesting.GetAction).GetName())
		}
	}
}

func TestResolveNilSources(t *testing.T) {
	r := NewResolver(Sources{})
	for _, p := range []*corev1.Pod{
		testPod("a", podOwner("batch/v1", "Job", "j")),
		testPod("b", podOwner("apps/v1", "StatefulSet", "s")),
		testPod("c", podOwner("kubeflow.org/v2beta1", "MPIJob", "m")),
	} {
		got, err := r.Resolve(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if w := want(p.Name, 1, gang.SourcePod); got != w {
			t.Errorf("%s: got %+v, want %+v", p.Name, got, w)
		}
	}
	if _, err := r.Resolve(context.Background(), nil); err == nil {
		t.Error("nil pod: want an error")
	}
}

func TestResolveErrorMessage(t *testing.T) {
	e := &ResolveError{Pod: "ns/p", Reason: "PodGroup ns/g not found", Retryable: true}
	if got, want := e.Error(), "pod ns/p: PodGroup ns/g not found"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// A workload's size is bounded like a declared one: a Job of two billion
// parallel pods is refused, not expected (the core would set memory aside
// for every pod it expects).
func TestResolveWorkloadTooLarge(t *testing.T) {
	r, _ := fixture{jobs: []*batchv1.Job{testJob("huge", 2_000_000_000)}, sts: []*appsv1.StatefulSet{testStatefulSet("wide", 200_000)}}.resolver(t)
	for _, pod := range []*corev1.Pod{
		testPod("j", podOwner("batch/v1", "Job", "huge")),
		testPod("s", podOwner("apps/v1", "StatefulSet", "wide")),
	} {
		_, err := r.Resolve(context.Background(), pod)
		var re *ResolveError
		if !errors.As(err, &re) || re.Retryable || !strings.Contains(err.Error(), "exceeds the maximum group size 100000") {
			t.Errorf("pod %s: got %v; want a final error naming the maximum group size", pod.Name, err)
		}
	}
}

// A group's topology comes from its pod's annotations (fluence's, then
// Kueue's), else its workload's; a malformed one is a final error.
func TestResolveTopology(t *testing.T) {
	preferring := testJob("train", 3)
	preferring.Annotations = map[string]string{k8sadapter.TopologyPreferredKey: "example.com/block"}
	r, _ := fixture{jobs: []*batchv1.Job{preferring}}.resolver(t)
	for _, tc := range []struct {
		name          string
		pod           *corev1.Pod
		req, pref     string
		wantErrSubstr string
	}{
		{name: "pod required", pod: testPod("a", podLabels(k8sadapter.PodGroupKey, "g", k8sadapter.GroupSizeKey, "2"), podAnnotations(k8sadapter.TopologyRequiredKey, "example.com/rack")), req: "example.com/rack"},
		{name: "kueue preferred on the pod", pod: testPod("b", podLabels(k8sadapter.PodGroupKey, "g", k8sadapter.GroupSizeKey, "2"), podAnnotations(k8sadapter.KueueTopologyPreferredKey, "example.com/rack")), pref: "example.com/rack"},
		{name: "the workload's", pod: testPod("c", podOwner("batch/v1", "Job", "train")), pref: "example.com/block"},
		{name: "the pod's before the workload's", pod: testPod("d", podOwner("batch/v1", "Job", "train"), podAnnotations(k8sadapter.TopologyRequiredKey, "example.com/rack")), req: "example.com/rack"},
		{name: "malformed", pod: testPod("e", podAnnotations(k8sadapter.TopologyRequiredKey, "a rack")), wantErrSubstr: `"a rack" is not a node label key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := r.Resolve(context.Background(), tc.pod)
			if tc.wantErrSubstr != "" {
				var re *ResolveError
				if !errors.As(err, &re) || re.Retryable || !strings.Contains(err.Error(), tc.wantErrSubstr) {
					t.Fatalf("got %v; want a final error with %q", err, tc.wantErrSubstr)
				}
				return
			}
			if err != nil || id.TopologyKey != tc.req || id.TopologyPreferred != tc.pref {
				t.Fatalf("got %+v, %v; want required %q preferred %q", id, err, tc.req, tc.pref)
			}
		})
	}
}
