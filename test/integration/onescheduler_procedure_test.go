package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/disruption"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// scheduleBound is how long any of fluence's own pods may stay unbound:
// the lease duration the test sets (4 s), for a standby to take over from
// an evicted leader, plus a scheduling cycle, with room for a slow machine.
const scheduleBound = 45 * time.Second

// The one-scheduler procedure of docs/install.md, on a real API server with
// kube-controller-manager's Deployment, ReplicaSet and disruption
// controllers: fluence's replicas are real `fluence scheduler` processes, one
// per pod of the chart's Deployment, started when the pod is bound and
// stopped when it is deleted, as a kubelet would; a pod is Ready when its
// process's /readyz is. Installed beside the stock kube-scheduler with two
// replicas, switched to one-scheduler mode (helm upgrade), kube-scheduler
// stopped, the Deployment rolled, the leader's node drained through the
// Eviction API (the chart's budget refuses what would leave no replica), and
// switched back after kube-scheduler is started again. At every step every
// pod of fluence's is bound within scheduleBound, although in one-scheduler
// mode nothing but fluence schedules them; a gang and a stock pod bind after
// each step.
func TestOneSchedulerProcedure(t *testing.T) {
	helm := helmBinary(t)
	bin := buildFluence(t)
	c := startCluster(t, localcluster.Options{})
	c.installPodGroupCRD()
	if _, err := c.Client.CoreV1().Namespaces().Create(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.addNodes("node", 4, "4", "8Gi")
	startNodeSim(c, simOptions{Namespace: c.NS})
	startWorkloadControllers(c)
	k := &replicaKubelet{c: c, t: t, bin: bin, revisions: map[string]chartRevision{}, procs: map[types.UID]*podProcess{}, bound: map[types.UID]time.Duration{}}
	values := func(oneScheduler bool) []string {
		return []string{"--set", "replicas=2", "--set", "podGroupCRD.install=false", "--set", fmt.Sprintf("oneScheduler=%v", oneScheduler),
			"--set", "leaderElection.leaseDuration=4s", "--set", "leaderElection.renewDeadline=3s", "--set", "leaderElection.retryPeriod=1s",
			"--set", "resources.requests.cpu=500m", "--set", "resources.requests.memory=256Mi"}
	}
	round := 0
	workloads := func(step string) {
		t.Helper()
		round++
		stock := newTestPod(fmt.Sprintf("stock-%d", round), "default-scheduler", "500m", "", time.Hour, nil)
		gang := groupPods(fmt.Sprintf("gang-%d", round), 3, "500m", time.Hour, time.Hour)
		c.createPods(append(gang, stock)...)
		want := append(names(gang), stock.Name)
		err := k.poll(time.Minute, func() (bool, error) {
			for _, name := range want {
				p, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, name, metav1.GetOptions{})
				if err != nil || p.Spec.NodeName == "" {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: the gang and the stock pod are not all bound within a minute", step)
		}
		t.Logf("%s: a gang of 3 and a stock pod bound", step)
	}

	// 1. Installed beside the cluster's kube-scheduler, which schedules
	// fluence's pods.
	stopStock := c.startScheduler(stockConfig, nil)
	objs := renderChart(t, helm, values(false)...)
	k.addRevision(objs)
	c.apply(objs)
	k.waitRollout("install")
	workloads("install")

	// 2. Switch with kube-scheduler still running: the new pods are
	// scheduled by it (or by the old replicas' leader, in a re-roll); only
	// then is kube-scheduler stopped.
	objs = renderChart(t, helm, values(true)...)
	k.addRevision(objs)
	c.applyServerSide(objs)
	k.waitRollout("switch to one-scheduler mode")
	stopStock()
	leader := k.waitLeader("after kube-scheduler stopped")
	t.Logf("kube-scheduler stopped; %s leads", leader.Name)
	workloads("one-scheduler mode")

	// 3. Roll the Deployment with no other scheduler in the cluster: each
	// new pod is scheduled by the running leader before an old one goes.
	k.restart()
	k.waitRollout("roll in one-scheduler mode")
	k.requireBoundByFluence("roll in one-scheduler mode")
	workloads("after the roll")

	// 4. Drain the leader's node: cordon it, evict through the Eviction API
	// (the budget refuses an eviction that would leave no replica ready), and
	// let the remaining replica take over and schedule the successor.
	leader = k.waitLeader("before the drain")
	k.drain(leader.Spec.NodeName)
	k.waitRollout("drain of the leader's node")
	k.requireBoundByFluence("drain of the leader's node")
	k.uncordon(leader.Spec.NodeName)
	workloads("after the drain")

	// 5. Switch back: kube-scheduler first, then the upgrade.
	c.startScheduler(stockConfig, nil)
	objs = renderChart(t, helm, values(false)...)
	k.addRevision(objs)
	c.applyServerSide(objs)
	k.waitRollout("switch back")
	workloads("after switching back")

	var worst time.Duration
	for _, d := range k.bound {
		worst = max(worst, d)
	}
	t.Logf("%d pods of fluence's were created and each bound; the slowest within %.1f s", len(k.bound), worst.Seconds())
}

// startWorkloadControllers runs kube-controller-manager's Deployment,
// ReplicaSet and disruption controllers in this process until c.Ctx ends.
func startWorkloadControllers(c *cluster) {
	c.t.Helper()
	cfg := rest.AddUserAgent(rest.CopyConfig(c.Config), "fluence-it-controllers")
	client := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactory(client, 0)
	dc, err := deployment.NewDeploymentController(c.Ctx, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), client)
	if err != nil {
		c.t.Fatal(err)
	}
	rsc := replicaset.NewReplicaSetController(c.Ctx, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), client, replicaset.BurstReplicas)
	disc := memory.NewMemCacheClient(client.Discovery())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disc)
	scales := scale.New(client.Discovery().RESTClient(), mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
	pdbc := disruption.NewDisruptionController(c.Ctx, factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets(),
		factory.Core().V1().ReplicationControllers(), factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments(),
		factory.Apps().V1().StatefulSets(), client, mapper, scales, client.Discovery())
	factory.Start(c.Ctx.Done())
	go dc.Run(c.Ctx, 2)
	go rsc.Run(c.Ctx, 2)
	go pdbc.Run(c.Ctx, 1)
	// The informers stop with c.Ctx, which the cluster's cleanup cancels.
}

// applyServerSide applies the objects as `helm upgrade` would: each is
// made or changed to the rendered one.
func (c *cluster) applyServerSide(objs []*unstructured.Unstructured) {
	c.t.Helper()
	c.eachResource(objs, func(ri dynamic.ResourceInterface, o *unstructured.Unstructured) {
		if _, err := ri.Apply(c.Ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "helm", Force: true}); err != nil {
			c.t.Fatalf("applying %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	})
}

// chartRevision is what a pod of one revision of the chart runs.
type chartRevision struct {
	deployment *unstructured.Unstructured
	config     string
	args       []string
	oneSched   bool
}

// podProcess is the scheduler process of one pod.
type podProcess struct {
	proc *process
	url  string
	rev  chartRevision
}

// replicaKubelet stands in for the kubelets of the nodes fluence's pods
// land on: each bound pod of the release runs the revision of the chart its
// config checksum names, as a `fluence scheduler` process; it is Ready when
// the process's /readyz is; a pod being deleted has its process stopped
// (SIGTERM) and is then removed. It acts whenever the test polls.
type replicaKubelet struct {
	c         *cluster
	t         *testing.T
	bin       string
	revisions map[string]chartRevision // by the pod template's checksum/config
	procs     map[types.UID]*podProcess
	bound     map[types.UID]time.Duration // how long each pod waited to be bound
	pending   map[types.UID]string
}

const selectorLabel = "app.kubernetes.io/name=fluence"

// addRevision records what the pods of this rendering of the chart run.
func (k *replicaKubelet) addRevision(objs []*unstructured.Unstructured) {
	k.t.Helper()
	dep := findObject(k.t, objs, "Deployment", releaseName)
	cm := findObject(k.t, objs, "ConfigMap", releaseName+"-config")
	config, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	sum, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "metadata", "annotations", "checksum/config")
	k.revisions[sum] = chartRevision{deployment: dep, config: config, args: containerArgs(k.t, dep, cm), oneSched: strings.Contains(config, "schedulerName: default-scheduler")}
}

// sync does what the kubelets would do now.
func (k *replicaKubelet) sync() {
	k.t.Helper()
	pods, err := k.c.Client.CoreV1().Pods(releaseNamespace).List(k.c.Ctx, metav1.ListOptions{LabelSelector: selectorLabel})
	if err != nil {
		k.t.Fatal(err)
	}
	k.pending = map[types.UID]string{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		pp := k.procs[pod.UID]
		switch {
		case pod.DeletionTimestamp != nil:
			if pp != nil {
				if err := pp.proc.interrupt(syscall.SIGTERM, 20*time.Second); err != nil {
					_ = pp.proc.cmd.Process.Kill()
				}
				delete(k.procs, pod.UID)
			}
			err := k.c.Client.CoreV1().Pods(releaseNamespace).Delete(k.c.Ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				k.t.Fatal(err)
			}
		case pod.Spec.NodeName == "":
			k.pending[pod.UID] = pod.Name
			if waited := time.Since(pod.CreationTimestamp.Time); waited > scheduleBound {
				k.t.Fatalf("fluence's pod %s has waited %.0f s for a scheduler", pod.Name, waited.Seconds())
			}
		case pp == nil:
			if _, ok := k.bound[pod.UID]; !ok {
				// Bound at most now; the API server's second-resolution
				// timestamps make this an upper bound.
				k.bound[pod.UID] = time.Since(pod.CreationTimestamp.Time)
			}
			rev, ok := k.revisions[pod.Annotations["checksum/config"]]
			if !ok {
				k.t.Fatalf("pod %s runs a revision of the chart the test did not render", pod.Name)
			}
			port, err := localcluster.FreePorts(1)
			if err != nil {
				k.t.Fatal(err)
			}
			proc := k.c.startChartSchedulerBinary(k.t, k.bin, rev.deployment, rev.config, rev.args, port[0])
			k.procs[pod.UID] = &podProcess{proc: proc, url: fmt.Sprintf("https://127.0.0.1:%d", port[0]), rev: rev}
		default:
			select {
			case <-pp.proc.exited:
				// A leader that lost its lease exits; the kubelet restarts it.
				k.t.Logf("pod %s's scheduler exited; restarting it:\n%s", pod.Name, tail(pp.proc.logs.String(), 5))
				delete(k.procs, pod.UID)
				k.setReady(pod, false)
				continue
			default:
			}
			if ready := readyz(pp.url); ready != isReady(pod) {
				k.setReady(pod, ready)
			}
		}
	}
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setReady writes the pod's status as a kubelet would.
func (k *replicaKubelet) setReady(pod *corev1.Pod, ready bool) {
	k.t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	now := metav1.Now()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = &now
	}
	ip := hostAddress()
	if ip == "" {
		ip = "10.244.0.10"
	}
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: status, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: status, LastTransitionTime: now},
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "scheduler", Ready: ready, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *pod.Status.StartTime}}}}
	if _, err := k.c.Client.CoreV1().Pods(releaseNamespace).UpdateStatus(k.c.Ctx, pod, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		k.t.Fatal(err)
	}
}

// readyz reports whether the scheduler's /readyz answers 200 now.
func readyz(base string) bool {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// poll syncs and checks cond every 200 ms until it holds or timeout passes.
func (k *replicaKubelet) poll(timeout time.Duration, cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(k.c.Ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		k.sync()
		return cond()
	})
}

// waitRollout waits until the Deployment has rolled out: every replica of
// the current template Ready, and no other pod left.
func (k *replicaKubelet) waitRollout(step string) {
	k.t.Helper()
	start := time.Now()
	var last string
	err := k.poll(3*time.Minute, func() (bool, error) {
		d, err := k.c.Client.AppsV1().Deployments(releaseNamespace).Get(k.c.Ctx, releaseName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := *d.Spec.Replicas
		s := d.Status
		last = fmt.Sprintf("generation %d observed %d, replicas %d updated %d ready %d available %d; pending %v", d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, k.pending)
		return s.ObservedGeneration >= d.Generation && s.Replicas == want && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.ReadyReplicas == want, nil
	})
	if err != nil {
		k.t.Fatalf("%s: the Deployment has not rolled out within 3 minutes: %s", step, last)
	}
	pods := k.pods()
	var where []string
	for _, p := range pods {
		where = append(where, p.Name+" on "+p.Spec.NodeName)
	}
	k.t.Logf("%s: rolled out in %.1f s: %s", step, time.Since(start).Seconds(), strings.Join(where, ", "))
}

// pods returns the release's pods that are not being deleted.
func (k *replicaKubelet) pods() []corev1.Pod {
	k.t.Helper()
	list, err := k.c.Client.CoreV1().Pods(releaseNamespace).List(k.c.Ctx, metav1.ListOptions{LabelSelector: selectorLabel})
	if err != nil {
		k.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// waitLeader waits until one of the pods' schedulers leads, and returns
// its pod.
func (k *replicaKubelet) waitLeader(step string) corev1.Pod {
	k.t.Helper()
	var leader corev1.Pod
	err := k.poll(time.Minute, func() (bool, error) {
		for _, p := range k.pods() {
			pp := k.procs[p.UID]
			if pp == nil {
				continue
			}
			select {
			case <-pp.proc.exited:
				continue
			default:
			}
			if strings.Contains(pp.proc.logs.String(), "Successfully acquired lease") {
				if !pp.rev.oneSched {
					return false, fmt.Errorf("%s leads but does not run the one-scheduler configuration", p.Name)
				}
				leader = p
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		k.t.Fatalf("%s: no replica leads within a minute: %v", step, err)
	}
	return leader
}

// restart rolls the Deployment as kubectl rollout restart does.
func (k *replicaKubelet) restart() {
	k.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339))
	if _, err := k.c.Client.AppsV1().Deployments(releaseNamespace).Patch(k.c.Ctx, releaseName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

// drain cordons the node and evicts the release's pods on it through the
// Eviction API, as kubectl drain does: an eviction the budget refuses (429)
// is retried until it is allowed.
func (k *replicaKubelet) drain(node string) {
	k.t.Helper()
	k.setUnschedulable(node, true)
	refused := 0
	var last error
	err := k.poll(3*time.Minute, func() (bool, error) {
		left := 0
		for _, p := range k.pods() {
			if p.Spec.NodeName != node {
				continue
			}
			left++
			err := k.c.Client.PolicyV1().Evictions(releaseNamespace).Evict(k.c.Ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: releaseNamespace}})
			switch {
			case err == nil:
				k.t.Logf("drain %s: evicted %s", node, p.Name)
			case apierrors.IsTooManyRequests(err):
				refused++
				last = err
			case apierrors.IsNotFound(err):
			default:
				return false, err
			}
		}
		return left == 0, nil
	})
	if err != nil {
		k.t.Fatalf("drain %s: %v (last refusal: %v)", node, err, last)
	}
	k.t.Logf("drain %s: done; the budget refused %d eviction attempts meanwhile (last: %v)", node, refused, last)
	for _, p := range k.pods() {
		if p.Spec.NodeName == node {
			k.t.Errorf("pod %s was placed on the cordoned node %s", p.Name, node)
		}
	}
}

func (k *replicaKubelet) uncordon(node string) { k.setUnschedulable(node, false) }

func (k *replicaKubelet) setUnschedulable(node string, on bool) {
	k.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	if _, err := k.c.Client.CoreV1().Nodes().Patch(k.c.Ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

// requireBoundByFluence checks that the release's pods were scheduled by a
// fluence process: their Scheduled event was written by the binary fluence
// (the event's managedFields name the program), not by the test's
// in-process stock scheduler.
func (k *replicaKubelet) requireBoundByFluence(step string) {
	k.t.Helper()
	var binders []string
	for _, p := range k.pods() {
		var by []string
		_ = wait.PollUntilContextTimeout(k.c.Ctx, 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := k.c.Client.EventsV1().Events(releaseNamespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			by = nil
			for _, e := range evs.Items {
				if e.Regarding.UID == p.UID && e.Reason == "Scheduled" {
					for _, f := range e.ManagedFields {
						by = append(by, f.Manager)
					}
				}
			}
			return len(by) > 0, nil
		})
		binders = append(binders, fmt.Sprintf("%s by %v", p.Name, by))
		if len(by) == 0 || slices.ContainsFunc(by, func(m string) bool { return m != "fluence" }) {
			k.t.Errorf("%s: pod %s was scheduled by %v, want a fluence replica (the binary fluence)", step, p.Name, by)
		}
	}
	k.t.Logf("%s: scheduled %s", step, strings.Join(binders, ", "))
}
