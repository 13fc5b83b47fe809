package plugin

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// draState is what the plugin reads of Dynamic Resource Allocation: the
// devices ResourceSlices publish (one index, updated as slices change)
// and the claims, templates and classes a pod's claims name. The
// informers are the scheduler's own, which its DynamicResources plugin
// watches too.
type draState struct {
	index     *k8sadapter.DeviceIndex
	claims    resourcelisters.ResourceClaimLister
	templates resourcelisters.ResourceClaimTemplateLister
	classes   resourcelisters.DeviceClassLister
	cel       *cel.Cache
}

// celCacheSize is how many compiled CEL selectors are kept, as
// kube-scheduler's own DRA plugin keeps.
const celCacheSize = 10

func (d *draState) Claim(ns, name string) (*resourceapi.ResourceClaim, bool) {
	c, err := d.claims.ResourceClaims(ns).Get(name)
	return c, err == nil
}

func (d *draState) Template(ns, name string) (*resourceapi.ResourceClaimTemplate, bool) {
	t, err := d.templates.ResourceClaimTemplates(ns).Get(name)
	return t, err == nil
}

func (d *draState) Class(name string) (*resourceapi.DeviceClass, bool) {
	c, err := d.classes.Get(name)
	return c, err == nil
}

func (d *draState) Classes() []*resourceapi.DeviceClass {
	cs, _ := d.classes.List(labels.Everything())
	slices.SortFunc(cs, func(a, b *resourceapi.DeviceClass) int { return strings.Compare(a.Name, b.Name) })
	return cs
}

// watchDevices registers the DRA informers' handlers: a slice changed
// re-feeds the nodes whose devices changed; a claim changed (allocated,
// released) re-feeds the pods it is reserved for or was made for.
func (p *Plugin) watchDevices(f informers.SharedInformerFactory) ([]cache.InformerSynced, error) {
	r := f.Resource().V1()
	p.dra = &draState{
		index:     k8sadapter.NewDeviceIndex(nil),
		claims:    r.ResourceClaims().Lister(),
		templates: r.ResourceClaimTemplates().Lister(),
		classes:   r.DeviceClasses().Lister(),
		cel:       cel.NewCache(celCacheSize, cel.Features{EnableConsumableCapacity: true}),
	}
	onSlice := func(o any, deleted bool) {
		if sl, ok := objectOf[*resourceapi.ResourceSlice](o); ok {
			p.feedNodes(p.dra.index.SliceSet(sl, deleted))
		}
	}
	sliceReg, err := r.ResourceSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { onSlice(o, false) },
		UpdateFunc: func(_, o any) { onSlice(o, false) },
		DeleteFunc: func(o any) { onSlice(o, true) },
	})
	if err != nil {
		return nil, err
	}
	onClaim := func(o any, deleted bool) {
		if c, ok := objectOf[*resourceapi.ResourceClaim](o); ok {
			p.claimChanged(c, deleted)
		}
	}
	claimReg, err := r.ResourceClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { onClaim(o, false) },
		UpdateFunc: func(_, o any) { onClaim(o, false) },
		DeleteFunc: func(o any) { onClaim(o, true) },
	})
	if err != nil {
		return nil, err
	}
	return []cache.InformerSynced{sliceReg.HasSynced, claimReg.HasSynced,
		r.ResourceClaimTemplates().Informer().HasSynced, r.DeviceClasses().Informer().HasSynced}, nil
}

// feedNodes feeds the core the named nodes again, as they are now.
func (p *Plugin) feedNodes(names []string) {
	for _, name := range names {
		if n, err := p.nodes.Get(name); err == nil {
			p.onNode(n)
		}
	}
}

// claimChanged feeds the core the nodes whose devices the claim's
// allocation took or gave back, then again the pods the claim is
// reserved for and the pod it was made for from a template.
func (p *Plugin) claimChanged(c *resourceapi.ResourceClaim, deleted bool) {
	p.claims.note(c.UID, p.dra.index.Releasing(c, deleted)) // before the core can reuse them (cacheorder.go)
	p.feedNodes(p.dra.index.ClaimSet(c, deleted))
	var names []string
	for _, r := range c.Status.ReservedFor {
		if r.Resource == "pods" {
			names = append(names, r.Name)
		}
	}
	for _, o := range c.OwnerReferences {
		if o.Kind == "Pod" {
			names = append(names, o.Name)
		}
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if pod, err := p.pods.Pods(c.Namespace).Get(name); err == nil {
			p.onPod(pod)
		}
	}
}

// coreNode is the node as the core sees it, with its devices.
func (p *Plugin) coreNode(n *corev1.Node) gang.Node {
	cn := p.opts.CoreNode(n)
	if p.dra != nil {
		cn.Devices = p.dra.index.Devices(n.Name)
		cn.Labels = k8sadapter.DeviceDomains(cn.Labels, cn.Devices, p.opts.TopologyLevels)
	}
	return cn
}

// corePod is the pod as the core sees it, with what its claims ask. A
// claim fluence cannot read or place makes the pod invalid, with why.
func (p *Plugin) corePod(pod *corev1.Pod, owned bool) gang.Pod {
	cp := p.opts.CorePod(pod, owned)
	if st := pod.Status.StartTime; st != nil && cp.NodeName != "" {
		// How long it has run, for an allocation adopted after a restart.
		cp.Ran = max(p.clock.Since(st.Time).Milliseconds()*ticksPerSecond/1000, 0)
	}
	if at, ok := k8sadapter.CheckpointOf(pod); ok && cp.NodeName != "" {
		// In the core's time: before this run began is negative, which
		// the core takes as it is (a checkpoint before the pod began
		// counts as none).
		cp.Checkpointed, cp.HasCheckpoint = p.ticksOf(at), true
	}
	if at, ok := k8sadapter.MovedAtOf(pod); ok && cp.NodeName != "" {
		cp.MovedAt, cp.HasMovedAt = p.ticksOf(at), true
	}
	if p.dra == nil {
		return cp
	}
	cp.Claims = k8sadapter.PodClaimKeys(pod, p.dra)
	if f, err := k8sadapter.SharedClaims(pod, cp.Filter, p.dra); err != nil {
		if cp.Invalid == "" {
			cp.Invalid = err.Error()
		}
	} else {
		cp.Filter = f
	}
	pc := p.dra.index.PodDevices(pod, p.dra, p.dra.cel)
	cp.Devices = pc.Requests
	for name, n := range pc.Extended {
		if p.opts.IsGPU(name) {
			cp.Requests.GPU = max(cp.Requests.GPU-n, 0)
		}
	}
	if cp.Invalid == "" {
		cp.Invalid = pc.Invalid
	}
	if cp.Invalid == "" && owned && cp.NodeName == "" {
		// Not seen yet, not wrong: a claim's template created with the
		// pod may reach this informer after it.
		cp.Waiting = pc.Waiting
	}
	return cp
}
