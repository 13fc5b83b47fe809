package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/groups"
)

// Pods without any group label form the group their workload implies, read
// from the real objects on the API server: an MPIJob's workers plus its
// launcher (whose pod belongs to a Job the MPIJob owns), a JobSet's
// replicated job (replicas x parallelism), a StatefulSet's replicas, and a
// Flux Operator MiniCluster's Job. No controller runs here, so the test
// makes the pods the controllers would, all but one of each group first:
// none of those may bind until the last one exists.
func TestWorkloadOwnersFormGroups(t *testing.T) {
	c := newFullCluster(t)
	for _, crd := range []workloadCRD{mpiJobCRD, jobSetCRD, miniClusterCRD} {
		c.installWorkloadCRD(crd)
	}
	c.addNodes("node", 6, "2", "8Gi")
	inv, _, _ := c.runFluence(nil)

	type workload struct {
		group string // the group's key in fluence's events, after the namespace
		pods  []*corev1.Pod
	}
	var workloads []workload

	// MPIJob: 2 workers owned by the MPIJob, 1 launcher pod owned by a Job
	// the MPIJob owns (MPI Operator v2).
	mpi := c.createCR(mpiJobCRD, "mpi", map[string]any{"mpiReplicaSpecs": map[string]any{
		"Launcher": map[string]any{"replicas": int64(1)},
		"Worker":   map[string]any{"replicas": int64(2)},
	}})
	launcherJob := c.createOwnedJob("mpi-launcher", 1, mpi, nil)
	workloads = append(workloads, workload{"mpijob:mpi", []*corev1.Pod{
		ownedPod("mpi-worker-0", mpi), ownedPod("mpi-worker-1", mpi), ownedPod("mpi-launcher-0", launcherJob),
	}})

	// JobSet: replicated job "workers", 2 replicas of a Job of parallelism 2.
	js := c.createCR(jobSetCRD, "js", map[string]any{"replicatedJobs": []any{
		map[string]any{"name": "workers", "replicas": int64(2)},
	}})
	var jsPods []*corev1.Pod
	for r := range 2 {
		job := c.createOwnedJob(fmt.Sprintf("js-workers-%d", r), 2, js, map[string]string{groups.JobSetReplicatedJobLabel: "workers"})
		for i := range 2 {
			jsPods = append(jsPods, ownedPod(fmt.Sprintf("js-workers-%d-%d", r, i), job))
		}
	}
	workloads = append(workloads, workload{"jobset:js-workers", jsPods})

	// StatefulSet of 3 replicas, created together (Parallel).
	sts := c.createStatefulSet("sts", 3, appsv1.ParallelPodManagement)
	var stsPods []*corev1.Pod
	for i := range 3 {
		stsPods = append(stsPods, ownedPod(fmt.Sprintf("sts-%d", i), sts))
	}
	workloads = append(workloads, workload{"statefulset:sts", stsPods})

	// MiniCluster: the Flux Operator runs it as one indexed Job of its size.
	mc := c.createCR(miniClusterCRD, "flux", map[string]any{"size": int64(2)})
	mcJob := c.createOwnedJob("flux", 2, mc, nil)
	workloads = append(workloads, workload{"minicluster:flux", []*corev1.Pod{ownedPod("flux-0", mcJob), ownedPod("flux-1", mcJob)}})

	var early []string
	for _, w := range workloads {
		n := len(w.pods)
		c.createPods(w.pods[:n-1]...)
		early = append(early, names(w.pods[:n-1])...)
		// The event's series keeps its first note, written when fewer
		// pods may have existed: check the group and its size.
		note := c.waitForEvent(30*time.Second, w.pods[0].Name, "FailedScheduling", fmt.Sprintf("group %s/%s: ", c.NS, w.group))
		if !strings.Contains(note, fmt.Sprintf(" of %d exist", n)) {
			t.Errorf("%s: %q, want a group of %d", w.pods[0].Name, note, n)
		}
	}
	if bound := c.boundCount(early...); bound != 0 {
		t.Fatalf("%d pods of incomplete groups bound", bound)
	}
	var all []*corev1.Pod
	for _, w := range workloads {
		c.createPods(w.pods[len(w.pods)-1])
		all = append(all, w.pods...)
	}
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(all)...)
	c.checkInvariants(inv)
}

// Workloads whose pods run independently imply no gang: each pod is a
// group of its own. A StatefulSet of the default policy, OrderedReady,
// creates its next pod only once this one runs, so its first pod must not
// wait for the others; a Job with more completions than parallelism runs
// independent tasks, as many at once as its parallelism (one group of
// size 1 for the whole Job would run them one at a time).
func TestIndependentWorkloadPods(t *testing.T) {
	c, inv, _, _ := startFluence(t, 2, "4", "8Gi", nil)

	sts := c.createStatefulSet("db", 3, "") // the API server defaults it to OrderedReady
	first := ownedPod("db-0", sts)
	c.createPods(first)

	sweep := c.createOwnedJob("sweep", 2, nil, nil, func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](6) })
	var tasks []*corev1.Pod
	for i := range 2 {
		p := ownedPod(fmt.Sprintf("sweep-%d", i), sweep)
		// Long enough that a second task binding while the first runs
		// shows they run together, not in turn.
		p.Annotations[runtimeAnnotation] = "120s"
		tasks = append(tasks, p)
	}
	c.createPods(tasks...)

	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return c.boundCount(first.Name) == 1 && c.boundCount(names(tasks)...) == 2, nil
	})
	if err != nil {
		t.Fatalf("after a minute: %d of OrderedReady StatefulSet's first pod bound (want 1), %d of the Job's 2 running tasks (want 2)",
			c.boundCount(first.Name), c.boundCount(names(tasks)...))
	}
	c.checkInvariants(inv)
}

// workloadCRD is a stand-in for a workload operator's CRD: the real
// group, version, kind and plural, with an open schema (fluence reads only
// a few spec fields).
type workloadCRD struct {
	gvr  schema.GroupVersionResource
	kind string
}

var (
	mpiJobCRD      = workloadCRD{schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}, "MPIJob"}
	jobSetCRD      = workloadCRD{schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}, "JobSet"}
	miniClusterCRD = workloadCRD{schema.GroupVersionResource{Group: "flux-framework.org", Version: "v1alpha2", Resource: "miniclusters"}, "MiniCluster"}
)

func (c *cluster) installWorkloadCRD(w workloadCRD) {
	c.t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: w.gvr.Resource + "." + w.gvr.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: w.gvr.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: w.kind, ListKind: w.kind + "List", Plural: w.gvr.Resource, Singular: strings.ToLower(w.kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: w.gvr.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
	client := apiextensionsclient.NewForConfigOrDie(c.Config)
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(c.Ctx, crd, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(c.Config)
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := dyn.Resource(w.gvr).Namespace(c.NS).List(c.Ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		c.t.Fatalf("%s CRD not served", w.kind)
	}
}

// createCR creates a custom resource of the CRD with the given spec.
func (c *cluster) createCR(w workloadCRD, name string, spec map[string]any) metav1.Object {
	c.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": w.gvr.GroupVersion().String(),
		"kind":       w.kind,
		"metadata":   map[string]any{"name": name, "namespace": c.NS},
		"spec":       spec,
	}}
	created, err := dynamic.NewForConfigOrDie(c.Config).Resource(w.gvr).Namespace(c.NS).Create(c.Ctx, obj, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("creating %s %s: %v", w.kind, name, err)
	}
	return created
}

// createOwnedJob creates a suspended Job of the given parallelism controlled
// by owner (a custom resource made by createCR; nil for none), changed by
// the edits given.
func (c *cluster) createOwnedJob(name string, parallelism int32, owner metav1.Object, labels map[string]string, edits ...func(*batchv1.Job)) metav1.Object {
	c.t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.NS, Labels: labels},
		Spec: batchv1.JobSpec{
			Parallelism: &parallelism,
			Suspend:     ptr.To(true), // no controller runs here
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
			}},
		},
	}
	if u, ok := owner.(*unstructured.Unstructured); ok {
		job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, u.GroupVersionKind())}
	}
	for _, edit := range edits {
		edit(job)
	}
	created, err := c.Client.BatchV1().Jobs(c.NS).Create(c.Ctx, job, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("creating Job %s: %v", name, err)
	}
	created.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("Job"))
	return created
}

func (c *cluster) createStatefulSet(name string, replicas int32, policy appsv1.PodManagementPolicyType) metav1.Object {
	c.t.Helper()
	labels := map[string]string{"app": name}
	sts, err := c.Client.AppsV1().StatefulSets(c.NS).Create(c.Ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.NS},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			PodManagementPolicy: policy,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	sts.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	return sts
}

// ownedPod is a 1-CPU fluence pod controlled by owner, without group labels.
func ownedPod(name string, owner metav1.Object) *corev1.Pod {
	p := newTestPod(name, "fluence", "1", "", time.Second, nil)
	gvk := owner.(interface {
		GroupVersionKind() schema.GroupVersionKind
	}).GroupVersionKind()
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)}
	return p
}
