package k8sadapter

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/gang"
)

const testDriver = "gpu.example.com"

// gpuSlice is a node-local slice of GPUs with the memory attribute (GiB).
func gpuSlice(name, node string, gen int64, mems ...int64) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.ResourceSliceSpec{Driver: testDriver, Pool: resourceapi.ResourcePool{Name: node, Generation: gen, ResourceSliceCount: 1}, NodeName: ptr.To(node)},
	}
	for i, m := range mems {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name:       "gpu-" + string(rune('0'+i)),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"memory": {IntValue: ptr.To(m)}},
		})
	}
	return s
}

func ids(ds []gang.Device) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func TestDeviceIndex(t *testing.T) {
	tainted := gpuSlice("n2-gpus", "n2", 1, 80, 80)
	tainted.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "broken", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	tainted.Spec.Devices[1].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0"}}
	shared := gpuSlice("shared", "", 1, 80)
	shared.Spec.NodeName, shared.Spec.AllNodes = nil, ptr.To(true)
	x := NewDeviceIndex([]*resourceapi.ResourceSlice{gpuSlice("n1-gpus", "n1", 1, 40, 80), tainted, shared})

	if got := ids(x.Devices("n1")); !slices.Equal(got, []string{testDriver + "/n1/gpu-0", testDriver + "/n1/gpu-1"}) {
		t.Errorf("n1's devices %v", got)
	}
	if d := x.Devices("n1")[1]; d.Attributes[testDriver+"/memory"] != "80" || d.Attributes["dra.driver"] != testDriver {
		t.Errorf("n1/gpu-1's attributes %v", d.Attributes)
	}
	if got := x.Devices("n2"); len(got) != 0 {
		t.Errorf("n2 offers %v; its one device is tainted NoSchedule, the other draws on shared counters", ids(got))
	}

	// A newer generation of n1's pool replaces the older slice's devices;
	// only n1 changed.
	if changed := x.SliceSet(gpuSlice("n1-gpus-v2", "n1", 2, 80), false); !slices.Equal(changed, []string{"n1"}) {
		t.Errorf("changed %v, want [n1]", changed)
	}
	if got := ids(x.Devices("n1")); !slices.Equal(got, []string{testDriver + "/n1/gpu-0"}) || x.Devices("n1")[0].Attributes[testDriver+"/memory"] != "80" {
		t.Errorf("n1 after its pool's new generation: %v", x.Devices("n1"))
	}
	// Its slices deleted, the node offers nothing.
	x.SliceSet(gpuSlice("n1-gpus", "n1", 1), true)
	if changed := x.SliceSet(gpuSlice("n1-gpus-v2", "n1", 2), true); !slices.Equal(changed, []string{"n1"}) || len(x.Devices("n1")) != 0 {
		t.Errorf("after deleting n1's slices: changed %v, devices %v", changed, x.Devices("n1"))
	}

	// A claim's allocation holds a device until the claim lets it go.
	x.SliceSet(gpuSlice("n3-gpus", "n3", 1, 80, 80), false)
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Status: resourceapi.ResourceClaimStatus{
		Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpus", Driver: testDriver, Pool: "n3", Device: "gpu-1"}}}}}}
	if changed := x.ClaimSet(claim, false); !slices.Equal(changed, []string{"n3"}) {
		t.Errorf("claim allocated: changed %v", changed)
	}
	if d := x.Devices("n3"); d[0].Holder != "" || d[1].Holder != "ns/c" {
		t.Errorf("holders %q, %q; want gpu-1 held by ns/c", d[0].Holder, d[1].Holder)
	}
	if changed := x.ClaimSet(claim, true); !slices.Equal(changed, []string{"n3"}) || x.Devices("n3")[1].Holder != "" {
		t.Errorf("claim deleted: changed %v, holder %q", changed, x.Devices("n3")[1].Holder)
	}
}

// claims is a ClaimSource of fixed objects.
type claims struct {
	claims    map[string]*resourceapi.ResourceClaim
	templates map[string]*resourceapi.ResourceClaimTemplate
	classes   map[string]*resourceapi.DeviceClass
}

func (c claims) Claim(ns, name string) (*resourceapi.ResourceClaim, bool) {
	x, ok := c.claims[ns+"/"+name]
	return x, ok
}

func (c claims) Template(ns, name string) (*resourceapi.ResourceClaimTemplate, bool) {
	x, ok := c.templates[ns+"/"+name]
	return x, ok
}

func (c claims) Class(name string) (*resourceapi.DeviceClass, bool) {
	x, ok := c.classes[name]
	return x, ok
}

func (c claims) Classes() []*resourceapi.DeviceClass {
	var out []*resourceapi.DeviceClass
	for _, k := range slices.Sorted(maps.Keys(c.classes)) {
		out = append(out, c.classes[k])
	}
	return out
}

func template(name string, reqs ...resourceapi.DeviceRequest) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}}}}
}

func exact(name, class string, count int64, sel string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
	if sel != "" {
		r.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: sel}}}
	}
	return r
}

func podWithTemplate(tmpl string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To(tmpl)}}}}
}

// A pod's template claims become device requests whose selectors are the
// class's and the request's CEL, evaluated by Kubernetes' DRA library; an
// allocated claim asks for exactly its devices; what fluence cannot read
// or place makes the pod invalid, with the claim named.
func TestPodDevices(t *testing.T) {
	x := NewDeviceIndex([]*resourceapi.ResourceSlice{gpuSlice("n1-gpus", "n1", 1, 40, 80)})
	dev := func(i int) *gang.Device { d := x.Devices("n1")[i]; return &d }
	src := claims{
		classes: map[string]*resourceapi.DeviceClass{"gpu": {ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + testDriver + `"`}}}}}},
		templates: map[string]*resourceapi.ResourceClaimTemplate{
			"ns/big":    template("big", exact("gpus", "gpu", 2, `device.attributes["`+testDriver+`"].memory >= 80`)),
			"ns/nocls":  template("nocls", exact("gpus", "missing", 1, "")),
			"ns/badcel": template("badcel", exact("gpus", "gpu", 1, `device.attributes[`)),
			"ns/all": template("all", resourceapi.DeviceRequest{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeAll}}),
			"ns/either": template("either", resourceapi.DeviceRequest{Name: "gpus", FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "big", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 4},
				{Name: "one", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}),
		},
		claims: map[string]*resourceapi.ResourceClaim{},
	}
	cache := cel.NewCache(10, cel.Features{})

	pc := x.PodDevices(podWithTemplate("big"), src, cache)
	if pc.Invalid != "" || len(pc.Requests) != 1 || len(pc.Requests[0].Choices) != 1 {
		t.Fatalf("big: %+v", pc)
	}
	ch := pc.Requests[0].Choices[0]
	if ch.Count != 2 || ch.Filter.Admits(dev(0)) || !ch.Filter.Admits(dev(1)) {
		t.Errorf("big's request: count %d, admits the 40 GiB GPU %v, the 80 GiB one %v", ch.Count, ch.Filter.Admits(dev(0)), ch.Filter.Admits(dev(1)))
	}
	if !strings.Contains(ch.Filter.Describe(), "memory >= 80") {
		t.Errorf("big's request is described as %q", ch.Filter.Describe())
	}

	if pc := x.PodDevices(podWithTemplate("either"), src, cache); len(pc.Requests) != 1 || len(pc.Requests[0].Choices) != 2 || pc.Requests[0].Choices[1].Count != 1 {
		t.Errorf("either: %+v", pc)
	}
	for tmpl, want := range map[string]string{
		"nocls":   "device class missing does not exist",
		"badcel":  "CEL selector",
		"all":     "allocationMode All",
		"nothere": "", // no template yet: waiting, not invalid
	} {
		pc := x.PodDevices(podWithTemplate(tmpl), src, cache)
		if want == "" {
			if pc.Invalid != "" || !strings.Contains(pc.Waiting, "does not exist") {
				t.Errorf("%s: %+v; want waiting for the template", tmpl, pc)
			}
			continue
		}
		if !strings.Contains(pc.Invalid, want) || !strings.Contains(pc.Invalid, "claim gpus") {
			t.Errorf("%s: invalid %q; want it to name the claim and say %q", tmpl, pc.Invalid, want)
		}
	}

	// Once the claim made from the template is allocated, the pod asks
	// for exactly its devices.
	p := podWithTemplate("big")
	p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpus", ResourceClaimName: ptr.To("p-gpus")}}
	src.claims["ns/p-gpus"] = &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-gpus"}, Status: resourceapi.ResourceClaimStatus{
		Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpus", Driver: testDriver, Pool: "n1", Device: "gpu-1"}}}}}}
	pc = x.PodDevices(p, src, cache)
	if len(pc.Requests) != 1 || pc.Requests[0].Choices[0].Count != 1 || !pc.Requests[0].Choices[0].Filter.Admits(dev(1)) || pc.Requests[0].Choices[0].Filter.Admits(dev(0)) {
		t.Errorf("allocated: %+v", pc)
	}
	if keys := PodClaimKeys(p, src); !slices.Equal(keys, []string{"ns/p-gpus"}) {
		t.Errorf("claim keys %v", keys)
	}
}

func TestDeviceDomains(t *testing.T) {
	clique := testDriver + "/clique"
	devs := func(vs ...string) []gang.Device {
		var out []gang.Device
		for _, v := range vs {
			a := map[string]string{}
			if v != "" {
				a[clique] = v
			}
			out = append(out, gang.Device{ID: v, Attributes: a})
		}
		return out
	}
	labels := map[string]string{"rack": "r1"}
	for _, c := range []struct {
		name    string
		devices []gang.Device
		want    string
	}{
		{"all agree", devs("c7", "c7"), "c7"},
		{"some without it", devs("c7", ""), "c7"},
		{"disagree", devs("c7", "c8"), ""},
		{"none", nil, ""},
	} {
		got := DeviceDomains(labels, c.devices, []string{"rack", clique})
		if got[clique] != c.want || got["rack"] != "r1" {
			t.Errorf("%s: labels %v; want %s=%q beside rack=r1", c.name, got, clique, c.want)
		}
	}
	if _, ok := labels[clique]; ok {
		t.Errorf("the node's own labels were changed: %v", labels)
	}
	// A node label of the same key wins over its devices.
	if got := DeviceDomains(map[string]string{clique: "own"}, devs("c7"), []string{clique}); got[clique] != "own" {
		t.Errorf("label overridden: %v", got)
	}
}

// An extended resource a device class serves becomes a request of that
// class; one no class serves stays what it was.
func TestPodDevicesExtended(t *testing.T) {
	x := NewDeviceIndex([]*resourceapi.ResourceSlice{gpuSlice("n1-gpus", "n1", 1, 80)})
	src := claims{classes: map[string]*resourceapi.DeviceClass{"gpu": {ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{
		ExtendedResourceName: ptr.To("example.com/gpu"),
		Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + testDriver + `"`}}}}}}}
	cache := cel.NewCache(10, cel.Features{})
	for _, c := range []struct {
		resource string
		served   bool
	}{{"example.com/gpu", true}, {ImplicitExtendedPrefix + "gpu", true}, {"example.com/fpga", false}} {
		q := resource.MustParse("3")
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceName(c.resource): q}, Limits: corev1.ResourceList{corev1.ResourceName(c.resource): q}}}}}}
		pc := x.PodDevices(p, src, cache)
		if !c.served {
			if len(pc.Requests) != 0 || len(pc.Extended) != 0 {
				t.Errorf("%s: %+v; no class serves it", c.resource, pc)
			}
			continue
		}
		if pc.Invalid != "" || len(pc.Requests) != 1 || pc.Requests[0].Choices[0].Count != 3 || pc.Extended[corev1.ResourceName(c.resource)] != 3 {
			t.Errorf("%s: %+v; want one request of 3 devices of class gpu", c.resource, pc)
			continue
		}
		if d := x.Devices("n1")[0]; !pc.Requests[0].Choices[0].Filter.Admits(&d) {
			t.Errorf("%s: the class's device is not admitted", c.resource)
		}
	}
}

// BenchmarkCELFilter is what marking costs per device when a request's
// selectors are CEL (the class's and one of the request's): evaluated by
// Kubernetes' DRA library the first time ("cel-first", the index's
// answers dropped before each device), and answered from the index after
// ("cel-known", a graph rebuilt with the same devices), against an
// ExactDevices filter (a binary search) in the same run.
func BenchmarkCELFilter(b *testing.B) {
	var slices_ []*resourceapi.ResourceSlice
	for i := range 100 {
		slices_ = append(slices_, gpuSlice(fmt.Sprintf("n%d-gpus", i), fmt.Sprintf("n%d", i), 1, 40, 80, 40, 80, 40, 80, 40, 80))
	}
	x := NewDeviceIndex(slices_)
	var devs []gang.Device
	for i := range 100 {
		devs = append(devs, x.Devices(fmt.Sprintf("n%d", i))...)
	}
	src := claims{classes: map[string]*resourceapi.DeviceClass{"gpu": {ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + testDriver + `"`}}}}}}}
	ch, why := x.choice("gpus", "gpu", []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["` + testDriver + `"].memory >= 80`}}},
		resourceapi.DeviceAllocationModeExactCount, 1, nil, src, cel.NewCache(10, cel.Features{}))
	if why != "" {
		b.Fatal(why)
	}
	exact := gang.NewExactDevices(devs[1].ID, devs[3].ID)
	for _, tc := range []struct {
		name string
		f    gang.DeviceFilter
		// forget: drop the index's answers before each device.
		forget bool
	}{{"exact-baseline", exact, false}, {"cel-first", ch.Filter, true}, {"cel-known", ch.Filter, false}} {
		admitted := 0
		for i := range devs {
			if tc.f.Admits(&devs[i]) {
				admitted++
			}
		}
		if want := map[string]int{"exact-baseline": 2, "cel-first": len(devs) / 2, "cel-known": len(devs) / 2}[tc.name]; admitted != want {
			b.Fatalf("%s admits %d of %d devices, want %d", tc.name, admitted, len(devs), want)
		}
		b.Run(tc.name, func(b *testing.B) {
			for i := range b.N {
				if tc.forget {
					x.verdicts = nil
				}
				tc.f.Admits(&devs[i%len(devs)])
			}
		})
	}
}

// A claim the pod names confines it, once allocated, to the nodes its
// allocation reaches, inside the pod's own filter; until then it adds
// nothing, and the pod asks for its devices instead.
func TestSharedClaims(t *testing.T) {
	x := NewDeviceIndex([]*resourceapi.ResourceSlice{gpuSlice("n1-gpus", "n1", 1, 80)})
	src := claims{
		classes: map[string]*resourceapi.DeviceClass{"gpu": {ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}},
		claims: map[string]*resourceapi.ResourceClaim{"ns/shared": {
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shared"},
			Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{exact("gpus", "gpu", 1, "")}}},
		}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To("shared")}}}}
	cache := cel.NewCache(10, cel.Features{})

	if f, err := SharedClaims(pod, nil, src); err != nil || f != nil {
		t.Fatalf("unallocated: filter %v, %v; want none", f, err)
	}
	if pc := x.PodDevices(pod, src, cache); len(pc.Requests) != 1 || pc.Requests[0].Choices[0].Count != 1 {
		t.Errorf("unallocated: requests %+v; want its one device", pc.Requests)
	}
	if len(PodClaimKeys(pod, src)) != 0 {
		t.Errorf("a named claim is the pod's own: %v", PodClaimKeys(pod, src))
	}

	src.claims["ns/shared"].Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpus", Driver: testDriver, Pool: "n1", Device: "gpu-0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}},
	}
	inner, err := NewPodFilter(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "gpu"}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := SharedClaims(pod, inner, src)
	if err != nil || f == nil {
		t.Fatalf("allocated: filter %v, %v", f, err)
	}
	gpu := map[string]string{"pool": "gpu"}
	for _, c := range []struct {
		node gang.Node
		want bool
	}{
		{gang.Node{Name: "n1", Labels: gpu}, true},
		{gang.Node{Name: "n2", Labels: gpu}, false},                              // the allocation does not reach it
		{gang.Node{Name: "n1", Labels: map[string]string{"pool": "cpu"}}, false}, // the pod's own selector refuses it
	} {
		if got := f.Admits(&c.node); got != c.want {
			t.Errorf("%s %v: admitted %v, want %v", c.node.Name, c.node.Labels, got, c.want)
		}
	}
	if why := f.Why([]*gang.Node{{Name: "n2", Labels: gpu}}); !strings.Contains(why, "shared claim ns/shared reaches 0 of 1 nodes") {
		t.Errorf("why: %q", why)
	}
	if f.Key() == inner.Key() {
		t.Error("the claim's filter has the pod's own key: pods of other claims would share its answers")
	}
	if pc := x.PodDevices(pod, src, cache); len(pc.Requests) != 0 {
		t.Errorf("allocated: requests %+v; its devices are counted by their holder", pc.Requests)
	}
}

// A pod whose template claim resolved to the claim its Kubernetes PodGroup
// made (spec.resourceClaims, DRAWorkloadResourceClaims) shares it with the
// group's other pods, as a claim they all name: not its own, nothing asked
// once allocated, and the group confined to the nodes the allocation
// reaches.
func TestPodGroupClaim(t *testing.T) {
	x := NewDeviceIndex([]*resourceapi.ResourceSlice{gpuSlice("n1-gpus", "n1", 2, 80)})
	group := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-channel-x7k2", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup", Name: "train", UID: "pg-uid"}}},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{exact("gpus", "gpu", 1, "")}}},
	}
	src := claims{
		classes:   map[string]*resourceapi.DeviceClass{"gpu": {ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}},
		claims:    map[string]*resourceapi.ResourceClaim{"ns/train-channel-x7k2": group},
		templates: map[string]*resourceapi.ResourceClaimTemplate{"ns/channel": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "channel"}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-0"},
		Spec:   corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "channel", ResourceClaimTemplateName: ptr.To("channel")}}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "channel", ResourceClaimName: ptr.To("train-channel-x7k2")}}}}
	cache := cel.NewCache(10, cel.Features{})

	if keys := PodClaimKeys(pod, src); len(keys) != 0 {
		t.Errorf("the group's claim is the pod's own: %v", keys)
	}
	if pc := x.PodDevices(pod, src, cache); len(pc.Requests) != 1 || pc.Requests[0].Choices[0].Count != 1 {
		t.Errorf("unallocated: requests %+v; want the claim's one device", pc.Requests)
	}
	group.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpus", Driver: testDriver, Pool: "n1", Device: "gpu-0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}},
	}
	if pc := x.PodDevices(pod, src, cache); len(pc.Requests) != 0 {
		t.Errorf("allocated: requests %+v; want none (its holder counts the devices)", pc.Requests)
	}
	f, err := SharedClaims(pod, nil, src)
	if err != nil || f == nil {
		t.Fatalf("allocated: filter %v, %v", f, err)
	}
	if !f.Admits(&gang.Node{Name: "n1"}) || f.Admits(&gang.Node{Name: "n2"}) {
		t.Error("the group's claim does not confine the pod to the node its allocation reaches")
	}

	// A claim made for the pod alone from the same template stays its own.
	group.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "train-0", UID: "pod-uid"}}
	if keys := PodClaimKeys(pod, src); !slices.Equal(keys, []string{"ns/train-channel-x7k2"}) {
		t.Errorf("a pod's own claim: keys %v", keys)
	}
}
