package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// draDriver is the driver the test's ResourceSlices name. No driver runs:
// kube-scheduler allocates claims from the slices, classes and claims
// alone, and the node simulator runs the pods without preparing devices.
// The slices stand in for what a GPU driver's kubelet plugin publishes.
const draDriver = "gpu.example.com"

// TestDRAGangs places GPU gangs whose devices come from Dynamic Resource
// Allocation, on a real API server with kube-controller-manager's
// ResourceClaim controller (a claim per pod from its template) and
// kube-scheduler's own DynamicResources plugin in fluence's profile (it
// allocates each claim on the node fluence chose). Six nodes of 8 CPUs:
// node-0 … node-3 publish four GPUs each; node-0 and node-1 have 40 GiB
// GPUs, node-2 and node-3 80 GiB ones; node-4 and node-5 none. Each step
// starts and ends with no pod, and after each no pod was turned away by
// the DynamicResources plugin (no FailedScheduling event saying it
// cannot allocate the claims): fluence placed only where the claims could
// be allocated.
func TestDRAGangs(t *testing.T) {
	c := startCluster(t, localcluster.Options{ClaimController: true, GarbageCollector: true})
	for i := range 6 {
		c.addNode(fmt.Sprintf("node-%d", i), "8", "32Gi", 0, nil)
	}
	for i := range 4 {
		mem := int64(40)
		if i >= 2 {
			mem = 80
		}
		c.publishGPUs(fmt.Sprintf("node-%d", i), 4, mem)
	}
	c.createDeviceClass(draDriver)
	c.createExtendedClass(extendedGPU)
	c.runFluence(nil)

	t.Run("four pods of four GPUs", func(t *testing.T) {
		c := c.on(t)
		defer c.clearDRA()
		c.createClaimTemplate("gpu4", exactly(4, ""))
		g := claimGroup("g4", 4, "gpu4")
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
		nodes := c.nodesOf(names(g)...)
		if got := distinct(nodes); !slices.Equal(got, []string{"node-0", "node-1", "node-2", "node-3"}) {
			t.Fatalf("g4 runs on %v; want one pod on each GPU node", nodes)
		}
		c.wantAllocated(g, 4, nil)
		c.wantNoClaimRefusal(names(g)...)
	})

	t.Run("devices matched by attribute", func(t *testing.T) {
		c := c.on(t)
		defer c.clearDRA()
		// lonode would take node-0 and node-1 first; only node-2 and
		// node-3 have GPUs of 80 GiB.
		c.createClaimTemplate("big2", exactly(2, `device.attributes["`+draDriver+`"].memory >= 80`))
		g := claimGroup("big", 2, "big2")
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
		for _, n := range c.nodesOf(names(g)...) {
			if n != "node-2" && n != "node-3" {
				t.Fatalf("big runs on %v; want node-2 or node-3, the nodes with 80 GiB GPUs", c.nodesOf(names(g)...))
			}
		}
		c.wantAllocated(g, 2, func(dev string) bool { return strings.HasPrefix(dev, "node-2/") || strings.HasPrefix(dev, "node-3/") })
		c.wantNoClaimRefusal(names(g)...)
	})

	t.Run("first available choice the whole gang can take", func(t *testing.T) {
		c := c.on(t)
		defer c.clearDRA()
		// Three pods would each rather have four 80 GiB GPUs, else two of
		// any: two nodes have the first, so the gang takes the second.
		c.createClaimTemplate("either", resourceapi.DeviceRequest{Name: "gpus", FirstAvailable: []resourceapi.DeviceSubRequest{
			{Name: "big", DeviceClassName: draDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 4,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["` + draDriver + `"].memory >= 80`}}}},
			{Name: "any", DeviceClassName: draDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
		}})
		g := claimGroup("fa", 3, "either")
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
		c.wantAllocated(g, 2, nil)
		for _, cl := range c.claimsOf(g) {
			for _, r := range cl.Status.Allocation.Devices.Results {
				if r.Request != "gpus/any" {
					t.Errorf("claim %s took %s for request %s; want the second choice, gpus/any", cl.Name, r.Device, r.Request)
				}
			}
		}
		c.wantNoClaimRefusal(names(g)...)
	})

	t.Run("an extended resource DRA devices serve", func(t *testing.T) {
		c := c.on(t)
		defer c.clearDRA()
		// No node lists example.com/gpu in its allocatable; the class
		// serves it from the driver's devices (DRAExtendedResource):
		// kube-scheduler makes each pod a claim for it and allocates it
		// on the node fluence chose.
		g := groupPods("ext", 2, "1", 0, 0)
		for _, p := range g {
			q := resource.MustParse("4")
			p.Spec.Containers[0].Resources.Requests[extendedGPU] = q
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{extendedGPU: q}
		}
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
		nodes := c.nodesOf(names(g)...)
		if got := distinct(nodes); len(got) != 2 || !strings.HasPrefix(got[0], "node-") || got[1] > "node-3" {
			t.Fatalf("ext runs on %v; want two of the GPU nodes", nodes)
		}
		for _, p := range g {
			pod, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := pod.Status.ExtendedResourceClaimStatus
			if st == nil {
				t.Fatalf("pod %s has no claim for its extended resource", p.Name)
			}
			cl, err := c.Client.ResourceV1().ResourceClaims(c.NS).Get(c.Ctx, st.ResourceClaimName, metav1.GetOptions{})
			if err != nil || cl.Status.Allocation == nil || len(cl.Status.Allocation.Devices.Results) != 4 {
				t.Fatalf("pod %s's extended resource claim %s: %v, allocation %+v", p.Name, st.ResourceClaimName, err, cl.Status.Allocation)
			}
			for _, r := range cl.Status.Allocation.Devices.Results {
				if r.Pool != pod.Spec.NodeName {
					t.Errorf("pod %s on %s holds %s/%s", p.Name, pod.Spec.NodeName, r.Pool, r.Device)
				}
			}
		}
		c.wantNoClaimRefusal(names(g)...)
	})

	t.Run("a shared claim keeps the group where it reaches", func(t *testing.T) {
		c := c.on(t)
		defer c.clearDRA()
		// One claim every pod names: the first pod's binding allocated
		// it (kube-scheduler's DynamicResources plugin, on the node
		// fluence chose for that pod); kube-scheduler admits the other
		// pods only where its allocation reaches, so the group that
		// names it next goes there whole, and the GPU it holds is no one
		// else's.
		cl := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: c.NS},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
				exactly(1, `device.attributes["`+draDriver+`"].memory >= 80`)}}},
		}
		if _, err := c.Client.ResourceV1().ResourceClaims(c.NS).Create(c.Ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		named := func(p *corev1.Pod) *corev1.Pod {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To("shared")}}
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
			return p
		}
		first := named(groupPods("lead", 1, "1", 0, 0)[0])
		c.createPods(first)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, first.Name)
		at := c.nodesOf(first.Name)[0]
		if at != "node-2" && at != "node-3" {
			t.Fatalf("lead runs on %s; its claim asks for an 80 GiB GPU, on node-2 or node-3", at)
		}
		g := groupPods("sh", 2, "1", 0, 0)
		for _, p := range g {
			named(p)
		}
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
		if got := distinct(c.nodesOf(names(g)...)); !slices.Equal(got, []string{at}) {
			t.Fatalf("sh runs on %v; want %s, where its shared claim's GPU is", got, at)
		}
		// That node has three GPUs left: a pod asking four goes elsewhere.
		four := claimGroup("four", 1, "gpu4")
		c.createClaimTemplate("gpu4", exactly(4, ""))
		c.createPods(four...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(four)...)
		if n := c.nodesOf(names(four)...)[0]; n == at {
			t.Errorf("a pod of four GPUs runs on %s, where the shared claim holds one of four", at)
		}
		c.wantNoClaimRefusal(append(append(names(g), first.Name), names(four)...)...)
	})

	t.Run("a gang more GPU nodes than there are is rejected", func(t *testing.T) {
		c := c.on(t)
		defer c.clearDRA()
		c.createClaimTemplate("gpu4", exactly(4, ""))
		g := claimGroup("five", 5, "gpu4")
		c.createPods(g...)
		note := c.waitForEvent(30*time.Second, "five-0", "FluenceGroupRejected", "device")
		if !strings.Contains(note, "device: needs 20 in total, 16 available") {
			t.Errorf("five's rejection %q does not say that its 5 pods need 20 devices and the cluster has 16", note)
		}
		if n := c.boundCount(names(g)...); n != 0 {
			t.Errorf("%d pods of the rejected gang were bound", n)
		}
		c.wantNoClaimRefusal(names(g)...)
	})
}

// cliqueKey is the device attribute naming a GPU's NVLink clique, as a
// rack-scale system's driver publishes it; TestDRADomains makes it a
// topology level.
const cliqueKey = draDriver + "/clique"

// GPU gangs kept inside one NVLink clique that no node label names: the
// driver publishes the clique as a device attribute, and topologyLevels
// lists that attribute's name. Six nodes of four GPUs, node-0 … node-2 in
// clique a, node-3 … node-5 in clique b.
//
//   - with one node of clique a taken, a gang of three pods of four GPUs
//     that requires one clique runs in clique b, though lonode alone would
//     take node-1, node-2 and node-3 across both;
//   - a gang of four that requires one clique is rejected: no clique has
//     four GPU nodes.
func TestDRADomains(t *testing.T) {
	c := startCluster(t, localcluster.Options{ClaimController: true, GarbageCollector: true})
	for i := range 6 {
		c.addNode(fmt.Sprintf("node-%d", i), "8", "32Gi", 0, nil)
		clique := "a"
		if i >= 3 {
			clique = "b"
		}
		c.publishGPUs(fmt.Sprintf("node-%d", i), 4, 80, "clique="+clique)
	}
	c.createDeviceClass(draDriver)
	c.runFluence(map[string]string{"topologyLevels": "[" + cliqueKey + "]"})
	c.createClaimTemplate("gpu4", exactly(4, ""))

	first := claimGroup("first", 1, "gpu4")
	c.createPods(first...)
	c.waitForPodPhase(time.Minute, corev1.PodRunning, names(first)...)
	if n := c.nodesOf(names(first)...); n[0] != "node-0" {
		t.Fatalf("first runs on %v; the test expects lonode's first node, node-0", n)
	}

	g := claimGroup("nvl", 3, "gpu4")
	for _, p := range g {
		p.Annotations = map[string]string{"fluence.flux-framework.org/topology-required": cliqueKey}
	}
	c.createPods(g...)
	c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
	if got := distinct(c.nodesOf(names(g)...)); !slices.Equal(got, []string{"node-3", "node-4", "node-5"}) {
		t.Fatalf("nvl, required in one clique, runs on %v; want clique b's three nodes", got)
	}
	c.waitForEvent(30*time.Second, "nvl-0", "FluenceGroupPlaced", "within "+cliqueKey+"=b")
	c.wantAllocated(g, 4, nil)

	big := claimGroup("big", 4, "gpu4")
	for _, p := range big {
		p.Annotations = map[string]string{"fluence.flux-framework.org/topology-required": cliqueKey}
	}
	c.createPods(big...)
	c.waitForEvent(30*time.Second, "big-0", "FluenceGroupRejected", cliqueKey)
	if n := c.boundCount(names(big)...); n != 0 {
		t.Errorf("%d pods of the gang no clique can hold were bound", n)
	}
	c.wantNoClaimRefusal(append(names(g), names(big)...)...)
}

// publishGPUs publishes a ResourceSlice of n GPUs for the node, each with
// the memory attribute (GiB) and the string attributes given, as a
// driver's kubelet plugin would.
func (c *cluster) publishGPUs(node string, n int, memGiB int64, attrs ...string) {
	c.t.Helper()
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   draDriver,
			Pool:     resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for i := range n {
		a := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"memory": {IntValue: ptr.To(memGiB)}}
		for _, kv := range attrs {
			k, v, _ := strings.Cut(kv, "=")
			a[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{StringValue: ptr.To(v)}
		}
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: a})
	}
	if _, err := c.Client.ResourceV1().ResourceSlices().Create(c.Ctx, s, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("publishing %s's GPUs: %v", node, err)
	}
}

// extendedGPU is the extended resource a device class of the driver
// serves (DRAExtendedResource).
const extendedGPU corev1.ResourceName = "example.com/gpu"

// createExtendedClass creates a class of the driver's devices that
// serves the extended resource.
func (c *cluster) createExtendedClass(name corev1.ResourceName) {
	c.t.Helper()
	dc := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "extended-gpu"},
		Spec: resourceapi.DeviceClassSpec{
			ExtendedResourceName: ptr.To(string(name)),
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + draDriver + `"`}}},
		},
	}
	if _, err := c.Client.ResourceV1().DeviceClasses().Create(c.Ctx, dc, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating the extended resource's class: %v", err)
	}
}

// createDeviceClass creates the class of the driver's devices.
func (c *cluster) createDeviceClass(driver string) {
	c.t.Helper()
	dc := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
			{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}},
		}},
	}
	if _, err := c.Client.ResourceV1().DeviceClasses().Create(c.Ctx, dc, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating device class: %v", err)
	}
}

// exactly is a request named gpus for count devices of the driver's
// class, with a CEL selector when sel is not empty.
func exactly(count int64, sel string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: draDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
	if sel != "" {
		r.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: sel}}}
	}
	return r
}

// createClaimTemplate creates a ResourceClaimTemplate of one request.
func (c *cluster) createClaimTemplate(name string, req resourceapi.DeviceRequest) {
	c.t.Helper()
	t := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.NS},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}}},
	}
	if _, err := c.Client.ResourceV1().ResourceClaimTemplates(c.NS).Create(c.Ctx, t, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating claim template %s: %v", name, err)
	}
}

// claimGroup is a fluence group of n one-CPU pods, each with a claim
// from the template, used by its container.
func claimGroup(name string, n int, template string) []*corev1.Pod {
	pods := groupPods(name, n, "1", 0, 0)
	for _, p := range pods {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To(template)}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
	}
	return pods
}

// claimsOf returns the claims made for the pods, waiting until each has
// one.
func (c *cluster) claimsOf(pods []*corev1.Pod) []resourceapi.ResourceClaim {
	c.t.Helper()
	var out []resourceapi.ResourceClaim
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		out = out[:0]
		for _, p := range pods {
			pod, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, p.Name, metav1.GetOptions{})
			if err != nil || len(pod.Status.ResourceClaimStatuses) == 0 || pod.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
				return false, nil
			}
			cl, err := c.Client.ResourceV1().ResourceClaims(c.NS).Get(c.Ctx, *pod.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			out = append(out, *cl)
		}
		return true, nil
	})
	if err != nil {
		c.t.Fatalf("the pods' claims were not all made: %v", err)
	}
	return out
}

// wantAllocated checks that every pod's claim is allocated n devices,
// each on the pod's node (and each one ok admits, when ok is not nil),
// and that no device is allocated twice.
func (c *cluster) wantAllocated(pods []*corev1.Pod, n int, ok func(dev string) bool) {
	c.t.Helper()
	nodeOf := map[string]string{}
	for i, node := range c.nodesOf(names(pods)...) {
		nodeOf[pods[i].Name] = node
	}
	seen := map[string]string{}
	for _, cl := range c.claimsOf(pods) {
		if cl.Status.Allocation == nil {
			c.t.Errorf("claim %s is not allocated", cl.Name)
			continue
		}
		owner := ""
		for _, o := range cl.OwnerReferences {
			owner = o.Name
		}
		rs := cl.Status.Allocation.Devices.Results
		if len(rs) != n {
			c.t.Errorf("claim %s of %s was allocated %d devices, want %d", cl.Name, owner, len(rs), n)
		}
		for _, r := range rs {
			dev := r.Pool + "/" + r.Device
			if r.Pool != nodeOf[owner] {
				c.t.Errorf("claim %s of %s (on %s) holds %s", cl.Name, owner, nodeOf[owner], dev)
			}
			if ok != nil && !ok(dev) {
				c.t.Errorf("claim %s of %s holds %s, which its selector does not admit", cl.Name, owner, dev)
			}
			if other, dup := seen[dev]; dup {
				c.t.Errorf("%s is allocated to %s and %s", dev, other, cl.Name)
			}
			seen[dev] = cl.Name
		}
	}
}

// wantNoClaimRefusal checks that no pod was turned away by the
// DynamicResources plugin: no FailedScheduling event of theirs says it.
func (c *cluster) wantNoClaimRefusal(pods ...string) {
	c.t.Helper()
	list, err := c.Client.EventsV1().Events(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, e := range list.Items {
		if slices.Contains(pods, e.Regarding.Name) && e.Reason == "FailedScheduling" && draRefusal(e.Note) {
			c.t.Errorf("pod %s was turned away: %s", e.Regarding.Name, e.Note)
		}
	}
}

// clearDRA deletes the pods, then the claims and templates, and waits
// until no claim is left, so that the next step starts with every device
// free.
func (c *cluster) clearDRA() {
	c.t.Helper()
	c.clearPods()
	if err := c.Client.ResourceV1().ResourceClaimTemplates(c.NS).DeleteCollection(c.Ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		c.t.Fatal(err)
	}
	if err := c.Client.ResourceV1().ResourceClaims(c.NS).DeleteCollection(c.Ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		c.t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		l, err := c.Client.ResourceV1().ResourceClaims(c.NS).List(c.Ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		c.t.Fatalf("claims left after the step: %v", err)
	}
	if err := c.Client.EventsV1().Events(c.NS).DeleteCollection(c.Ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func distinct(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// draRefusal reports whether a FailedScheduling note is a refusal that
// mentions a claim, such as DynamicResources' "cannot allocate all
// claims". fluence's own waits name a claim too and are not refusals: for
// kube-scheduler's DRA manager to see a claim's devices released (its
// group keeping its placement), and for a claim or claim template its
// informers have not delivered yet (one created just before the pods).
func draRefusal(note string) bool {
	return strings.Contains(note, "claim") && !strings.Contains(note, "fluence: waiting for the scheduler's") &&
		!(strings.Contains(note, "fluence: pod group ") && strings.Contains(note, " waits for its pod "))
}
