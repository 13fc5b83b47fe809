package k8sadapter

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// DeviceIndex is the devices ResourceSlices publish, as the core and the
// pods' device filters see them: per node, the devices in the order
// kube-scheduler's allocator considers them, and by ID the API's own
// description, which CEL selectors are evaluated against.
//
// Only devices the core can count exactly are offered: a device of a
// slice reachable from several nodes (nodeSelector, allNodes), one that
// draws on a partitionable device's shared counters, and one with a
// NoSchedule or NoExecute taint are left out, so a group needing them is
// rejected or waits rather than being placed where the DynamicResources
// plugin would turn it away. Slices of a pool older than its newest
// generation are ignored, as the allocator ignores them.
//
// One index lives as long as the scheduler: SliceSet takes each slice as
// it changes, and the filters made from it read what it holds then (the core marks
// devices with them under its own lock, while slices change).
type DeviceIndex struct {
	mu     sync.RWMutex
	byNode map[string][]gang.Device
	byID   map[string]indexed
	// slices by name, and the names by pool and by node.
	slices     map[string]*resourceapi.ResourceSlice
	pools      map[string]map[string]bool
	nodeSlices map[string]map[string]bool
	// holder is the claim (namespace/name) holding each device by ID,
	// and held the devices each claim holds, from the claims'
	// allocations (ClaimSet).
	holder map[string]string
	held   map[string][]string
	// verdicts remembers CEL filters' answers, by filter key and device
	// ID, for the device as the index held it then: a filter the core
	// marks again on a new graph (nodes joined) is not evaluated again
	// on the devices that did not change. Under its own lock, since
	// filters answer while the index is read.
	vmu      sync.Mutex
	verdicts map[string]map[string]verdict
}

// maxVerdictFilters bounds how many filters' answers the index keeps.
const maxVerdictFilters = 256

type verdict struct {
	dev *resourceapi.Device
	ok  bool
}

type indexed struct {
	driver string
	node   string
	dev    *resourceapi.Device
}

// NewDeviceIndex indexes the slices.
func NewDeviceIndex(slices_ []*resourceapi.ResourceSlice) *DeviceIndex {
	x := &DeviceIndex{}
	for _, s := range slices_ {
		x.SliceSet(s, false)
	}
	return x
}

// SliceSet records a slice added or changed (or deleted), and returns the
// nodes whose devices changed, sorted. Only the nodes of the slice's pool
// are indexed again, so a cluster publishing thousands of slices at
// start costs one node's work per slice.
func (x *DeviceIndex) SliceSet(s *resourceapi.ResourceSlice, deleted bool) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.slices == nil {
		x.slices, x.pools, x.nodeSlices = map[string]*resourceapi.ResourceSlice{}, map[string]map[string]bool{}, map[string]map[string]bool{}
		x.byNode, x.byID = map[string][]gang.Device{}, map[string]indexed{}
	}
	affected := map[string]bool{}
	if old := x.slices[s.Name]; old != nil {
		if n := ptrOr(old.Spec.NodeName); n != "" {
			affected[n] = true
		}
		x.unlink(old)
		for n := range x.poolNodes(poolOf(old)) {
			affected[n] = true
		}
	}
	if !deleted {
		x.slices[s.Name] = s
		link(x.pools, poolOf(s), s.Name)
		if n := ptrOr(s.Spec.NodeName); n != "" {
			link(x.nodeSlices, n, s.Name)
		}
		for n := range x.poolNodes(poolOf(s)) {
			affected[n] = true
		}
	}
	var changed []string
	for _, n := range slices.Sorted(maps.Keys(affected)) {
		if x.reindex(n) {
			changed = append(changed, n)
		}
	}
	return changed
}

func poolOf(s *resourceapi.ResourceSlice) string { return s.Spec.Driver + "/" + s.Spec.Pool.Name }

func link(m map[string]map[string]bool, k, name string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][name] = true
}

func (x *DeviceIndex) unlink(s *resourceapi.ResourceSlice) {
	delete(x.slices, s.Name)
	delete(x.pools[poolOf(s)], s.Name)
	if len(x.pools[poolOf(s)]) == 0 {
		delete(x.pools, poolOf(s))
	}
	if n := ptrOr(s.Spec.NodeName); n != "" {
		delete(x.nodeSlices[n], s.Name)
		if len(x.nodeSlices[n]) == 0 {
			delete(x.nodeSlices, n)
		}
	}
}

// poolNodes are the nodes of a pool's node-local slices.
func (x *DeviceIndex) poolNodes(pool string) map[string]bool {
	out := map[string]bool{}
	for name := range x.pools[pool] {
		if n := ptrOr(x.slices[name].Spec.NodeName); n != "" {
			out[n] = true
		}
	}
	return out
}

// reindex builds the node's devices from its slices of each pool's
// newest generation, in driver, pool and slice order, and reports
// whether they changed.
func (x *DeviceIndex) reindex(node string) bool {
	var ss []*resourceapi.ResourceSlice
	for name := range x.nodeSlices[node] {
		ss = append(ss, x.slices[name])
	}
	slices.SortFunc(ss, func(a, b *resourceapi.ResourceSlice) int {
		return cmp.Or(cmp.Compare(a.Spec.Driver, b.Spec.Driver), cmp.Compare(a.Spec.Pool.Name, b.Spec.Pool.Name), cmp.Compare(a.Name, b.Name))
	})
	for _, d := range x.byNode[node] {
		delete(x.byID, d.ID)
	}
	var ds []gang.Device
	for _, s := range ss {
		if s.Spec.Pool.Generation < x.newest(poolOf(s)) {
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if len(d.ConsumesCounters) > 0 || refusesScheduling(d.Taints) {
				continue
			}
			id := s.Spec.Driver + "/" + s.Spec.Pool.Name + "/" + d.Name
			if _, dup := x.byID[id]; dup {
				continue
			}
			x.byID[id] = indexed{driver: s.Spec.Driver, node: node, dev: d}
			ds = append(ds, gang.Device{ID: id, Attributes: attributeStrings(s.Spec.Driver, d)})
		}
	}
	same := slices.EqualFunc(ds, x.byNode[node], func(a, b gang.Device) bool { return a.ID == b.ID && maps.Equal(a.Attributes, b.Attributes) })
	if len(ds) == 0 {
		delete(x.byNode, node)
	} else {
		x.byNode[node] = ds
	}
	return !same
}

// newest is the highest generation among a pool's slices: the allocator
// ignores the older ones, which a driver is replacing.
func (x *DeviceIndex) newest(pool string) int64 {
	var g int64
	for name := range x.pools[pool] {
		g = max(g, x.slices[name].Spec.Pool.Generation)
	}
	return g
}

func ptrOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func refusesScheduling(ts []resourceapi.DeviceTaint) bool {
	return slices.ContainsFunc(ts, func(t resourceapi.DeviceTaint) bool {
		return t.Effect == resourceapi.DeviceTaintEffectNoSchedule || t.Effect == resourceapi.DeviceTaintEffectNoExecute
	})
}

// attributeStrings renders a device's attributes and capacities as vertex
// properties: qualified names (the driver's domain where a name has
// none), values as strings, capacities under capacity/<name>.
func attributeStrings(driver string, d *resourceapi.Device) map[string]string {
	out := map[string]string{"dra.driver": driver}
	qualify := func(n resourceapi.QualifiedName) string {
		if strings.Contains(string(n), "/") {
			return string(n)
		}
		return driver + "/" + string(n)
	}
	for n, a := range d.Attributes {
		var v string
		switch {
		case a.StringValue != nil:
			v = *a.StringValue
		case a.IntValue != nil:
			v = fmt.Sprint(*a.IntValue)
		case a.BoolValue != nil:
			v = fmt.Sprint(*a.BoolValue)
		case a.VersionValue != nil:
			v = *a.VersionValue
		}
		out[qualify(n)] = v
	}
	for n, c := range d.Capacity {
		out["capacity/"+qualify(n)] = c.Value.String()
	}
	return out
}

// Devices are the node's devices, for gang.Node.Devices.
func (x *DeviceIndex) Devices(node string) []gang.Device {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	ds := x.byNode[node]
	if len(x.holder) == 0 {
		return ds
	}
	out := slices.Clone(ds)
	for i := range out {
		out[i].Holder = x.holder[out[i].ID]
	}
	return out
}

// Releasing returns the devices the claim holds in the index that its
// new state (deleted: gone) no longer holds, each with its node, as
// driver/pool/device: what ClaimSet is about to free. Call it before
// ClaimSet, from the same goroutine.
func (x *DeviceIndex) Releasing(c *resourceapi.ResourceClaim, deleted bool) []ReleasedDevice {
	keep := map[string]bool{}
	if !deleted && c.Status.Allocation != nil {
		for _, r := range c.Status.Allocation.Devices.Results {
			keep[r.Driver+"/"+r.Pool+"/"+r.Device] = true
		}
	}
	key := c.Namespace + "/" + c.Name
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []ReleasedDevice
	for _, id := range x.held[key] {
		if !keep[id] && x.holder[id] == key {
			if n := x.byID[id].node; n != "" {
				out = append(out, ReleasedDevice{ID: id, Node: n, Claim: key})
			}
		}
	}
	return out
}

// ReleasedDevice is a device a claim gives back: its ID
// (driver/pool/device), its node and the claim (namespace/name).
type ReleasedDevice struct{ ID, Node, Claim string }

// ClaimSet records what a claim's allocation holds (nothing when it is
// not allocated, or deleted), and returns the nodes whose devices'
// holders changed, sorted.
func (x *DeviceIndex) ClaimSet(c *resourceapi.ResourceClaim, deleted bool) []string {
	key := c.Namespace + "/" + c.Name
	var ids []string
	if !deleted && c.Status.Allocation != nil {
		for _, r := range c.Status.Allocation.Devices.Results {
			ids = append(ids, r.Driver+"/"+r.Pool+"/"+r.Device)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.holder == nil {
		x.holder, x.held = map[string]string{}, map[string][]string{}
	}
	old := x.held[key]
	if slices.Equal(old, ids) {
		return nil
	}
	var nodes []string
	for _, id := range old {
		if x.holder[id] == key {
			delete(x.holder, id)
		}
		nodes = append(nodes, x.byID[id].node)
	}
	for _, id := range ids {
		x.holder[id] = key
		nodes = append(nodes, x.byID[id].node)
	}
	if len(ids) == 0 {
		delete(x.held, key)
	} else {
		x.held[key] = ids
	}
	nodes = slices.DeleteFunc(nodes, func(n string) bool { return n == "" })
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// PodClaimKeys are the claims (namespace/name) made for the pod alone,
// whose devices its requests ask: those made from its templates, and the
// one kube-scheduler made for its extended resources. A claim the pod
// names may be shared; its devices are counted once, by the claim
// (gang.Device.Holder), not by any pod.
func PodClaimKeys(pod *corev1.Pod, src ClaimSource) []string {
	var out []string
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName == nil {
			continue
		}
		if c, ok := src.Claim(pod.Namespace, *st.ResourceClaimName); ok && groupOwned(c) {
			continue // the group's, shared by its pods: counted by its holder
		}
		out = append(out, pod.Namespace+"/"+*st.ResourceClaimName)
	}
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil && st.ResourceClaimName != "" {
		out = append(out, pod.Namespace+"/"+st.ResourceClaimName)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// groupOwned reports whether a claim was made for a Kubernetes PodGroup
// (its spec.resourceClaims, DRAWorkloadResourceClaims): every pod of the
// group whose own claim matches uses it, as a claim they all name.
func groupOwned(c *resourceapi.ResourceClaim) bool {
	for _, o := range c.OwnerReferences {
		if o.Kind == "PodGroup" && strings.HasPrefix(o.APIVersion, "scheduling.k8s.io/") {
			return true
		}
	}
	return false
}

// sharedClaims are the claims a pod shares with others: those it names,
// and those its PodGroup made that its own claims resolved to.
func sharedClaims(pod *corev1.Pod, src ClaimSource) (names []string) {
	for _, pc := range pod.Spec.ResourceClaims {
		switch {
		case pc.ResourceClaimName != nil:
			names = append(names, *pc.ResourceClaimName)
		case pc.ResourceClaimTemplateName != nil:
			for _, st := range pod.Status.ResourceClaimStatuses {
				if st.Name != pc.Name || st.ResourceClaimName == nil {
					continue
				}
				if c, ok := src.Claim(pod.Namespace, *st.ResourceClaimName); ok && groupOwned(c) {
					names = append(names, c.Name)
				}
			}
		}
	}
	return names
}

// ClaimSource finds what a pod's claims ask: the claims and templates by
// name, the device classes by name. Listers satisfy it in the plugin.
type ClaimSource interface {
	Claim(namespace, name string) (*resourceapi.ResourceClaim, bool)
	Template(namespace, name string) (*resourceapi.ResourceClaimTemplate, bool)
	Class(name string) (*resourceapi.DeviceClass, bool)
	// Classes are all device classes, for the extended resources they
	// serve.
	Classes() []*resourceapi.DeviceClass
}

// ImplicitExtendedPrefix begins the extended resource every DeviceClass
// serves under its own name (deviceclass.resource.kubernetes.io/<class>),
// beside the one its spec.extendedResourceName names.
const ImplicitExtendedPrefix = "deviceclass.resource.kubernetes.io/"

// PodClaims is what a pod's resource claims ask of the core.
type PodClaims struct {
	Requests []gang.DeviceRequest
	// Invalid says why the claims cannot be read or placed (a class
	// that does not exist, a CEL expression that does not compile, an
	// allocation mode fluence does not model).
	Invalid string
	// Waiting says what the pod waits for before it can be scheduled at
	// all (its claim is not created yet).
	Waiting string
	// Extended are the pod's extended resources that DRA devices serve
	// (DRAExtendedResource), with the amounts asked: they are in
	// Requests, and the caller no longer counts them as anything else.
	Extended map[corev1.ResourceName]int64
}

// PodDevices reads a pod's resource claims. A claim made for the pod from
// a template asks for its template's devices until it is allocated, then
// for exactly the devices it holds. A claim the pod names directly may be
// shared with other pods: once allocated it asks nothing more (its
// devices are counted by their holder, and SharedClaims confines the pod
// to the nodes the allocation reaches); until then each pod naming it
// asks for its devices, which is exact for a claim one pod uses and more
// than a shared one will take (docs/dra.md).
func (x *DeviceIndex) PodDevices(pod *corev1.Pod, src ClaimSource, cache *cel.Cache) PodClaims {
	var out PodClaims
	x.extended(pod, src, cache, &out)
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			x.namedClaim(pod, *pc.ResourceClaimName, src, cache, &out)
			continue
		}
		if pc.ResourceClaimTemplateName == nil {
			continue
		}
		var claim *resourceapi.ResourceClaim
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == pc.Name && st.ResourceClaimName != nil {
				claim, _ = src.Claim(pod.Namespace, *st.ResourceClaimName)
			}
		}
		if claim != nil && groupOwned(claim) {
			x.namedClaim(pod, claim.Name, src, cache, &out)
			continue
		}
		if claim != nil && claim.Status.Allocation != nil {
			if ids := allocatedIDs(claim); len(ids) > 0 {
				out.Requests = append(out.Requests, gang.DeviceRequest{Name: claim.Name, Choices: []gang.DeviceChoice{{Name: "allocated", Count: int64(len(ids)), Filter: gang.NewExactDevices(ids...)}}})
			}
			continue
		}
		var spec *resourceapi.ResourceClaimSpec
		name := pc.Name
		if claim != nil {
			spec, name = &claim.Spec, claim.Name
		} else if t, ok := src.Template(pod.Namespace, *pc.ResourceClaimTemplateName); ok {
			spec = &t.Spec.Spec
		} else {
			out.Waiting = fmt.Sprintf("resource claim template %s/%s does not exist", pod.Namespace, *pc.ResourceClaimTemplateName)
			continue
		}
		reqs, why := x.requests(name, spec, src, cache)
		if why != "" && out.Invalid == "" {
			out.Invalid = fmt.Sprintf("claim %s: %s", pc.Name, why)
		}
		out.Requests = append(out.Requests, reqs...)
	}
	return out
}

// requests translates a claim's device requests.
func (x *DeviceIndex) requests(claim string, spec *resourceapi.ResourceClaimSpec, src ClaimSource, cache *cel.Cache) ([]gang.DeviceRequest, string) {
	var out []gang.DeviceRequest
	for _, r := range spec.Devices.Requests {
		req := gang.DeviceRequest{Name: claim + "/" + r.Name}
		switch {
		case r.Exactly != nil:
			ch, why := x.choice(r.Name, r.Exactly.DeviceClassName, r.Exactly.Selectors, r.Exactly.AllocationMode, r.Exactly.Count, r.Exactly.AdminAccess, src, cache)
			if why != "" {
				return nil, fmt.Sprintf("request %s: %s", r.Name, why)
			}
			if ch == nil {
				continue
			}
			req.Choices = append(req.Choices, *ch)
		case len(r.FirstAvailable) > 0:
			for _, sub := range r.FirstAvailable {
				ch, why := x.choice(sub.Name, sub.DeviceClassName, sub.Selectors, sub.AllocationMode, sub.Count, nil, src, cache)
				if why != "" {
					return nil, fmt.Sprintf("request %s/%s: %s", r.Name, sub.Name, why)
				}
				if ch != nil {
					req.Choices = append(req.Choices, *ch)
				}
			}
		}
		if len(req.Choices) > 0 {
			out = append(out, req)
		}
	}
	return out, ""
}

// choice is one way to meet a request; nil for one that takes no device
// from others (admin access).
func (x *DeviceIndex) choice(name, class string, sels []resourceapi.DeviceSelector, mode resourceapi.DeviceAllocationMode, count int64, admin *bool, src ClaimSource, cache *cel.Cache) (*gang.DeviceChoice, string) {
	if admin != nil && *admin {
		return nil, ""
	}
	if mode == resourceapi.DeviceAllocationModeAll {
		return nil, "allocationMode All is not placed by fluence yet"
	}
	if count <= 0 {
		count = 1
	}
	dc, ok := src.Class(class)
	if !ok {
		return nil, fmt.Sprintf("device class %s does not exist", class)
	}
	f := &celFilter{index: x, class: class}
	var exprs []string
	for _, s := range dc.Spec.Selectors {
		if s.CEL != nil {
			exprs = append(exprs, s.CEL.Expression)
		}
	}
	var own []string
	for _, s := range sels {
		if s.CEL != nil {
			exprs = append(exprs, s.CEL.Expression)
			own = append(own, s.CEL.Expression)
		}
	}
	for _, e := range exprs {
		r := cache.GetOrCompile(e)
		if r.Error != nil {
			return nil, fmt.Sprintf("CEL selector %q: %v", e, r.Error)
		}
		f.progs = append(f.progs, r)
	}
	f.key = "class=" + class + ";" + strings.Join(exprs, ";")
	f.desc = "devices of class " + class
	if len(own) > 0 {
		f.desc += " with " + strings.Join(own, " && ")
	}
	return &gang.DeviceChoice{Name: name, Count: count, Filter: f}, ""
}

// celFilter admits the devices a class's and a request's CEL selectors
// all accept, evaluated by Kubernetes' own DRA CEL library. A device the
// index does not know, or an expression that fails at run time, is not
// admitted.
type celFilter struct {
	index     *DeviceIndex
	class     string
	progs     []cel.CompilationResult
	key, desc string
}

func (f *celFilter) Admits(d *gang.Device) bool {
	x := f.index
	x.mu.RLock()
	ix, ok := x.byID[d.ID]
	x.mu.RUnlock()
	if !ok {
		return false
	}
	x.vmu.Lock()
	if v, ok := x.verdicts[f.key][d.ID]; ok && v.dev == ix.dev {
		x.vmu.Unlock()
		return v.ok
	}
	x.vmu.Unlock()
	admits := f.evaluate(ix)
	x.vmu.Lock()
	if x.verdicts == nil || len(x.verdicts) > maxVerdictFilters && x.verdicts[f.key] == nil {
		// Filters come and go with claim templates: past this many,
		// start again rather than keep the answers of ones long gone.
		x.verdicts = map[string]map[string]verdict{}
	}
	if x.verdicts[f.key] == nil {
		x.verdicts[f.key] = map[string]verdict{}
	}
	x.verdicts[f.key][d.ID] = verdict{dev: ix.dev, ok: admits}
	x.vmu.Unlock()
	return admits
}

// evaluate runs the selectors on the device, as kube-scheduler's
// allocator does (a selector failing at run time admits nothing).
func (f *celFilter) evaluate(ix indexed) bool {
	in := cel.Device{Driver: ix.driver, Attributes: ix.dev.Attributes, Capacity: ix.dev.Capacity, AllowMultipleAllocations: ix.dev.AllowMultipleAllocations}
	for _, p := range f.progs {
		ok, _, err := p.DeviceMatches(context.Background(), in)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

func (f *celFilter) Key() string      { return f.key }
func (f *celFilter) Describe() string { return f.desc }

// DeviceDomains gives a node the topology levels its devices name: for
// each level key that is not one of the node's labels but is an
// attribute (qualified name) of its devices, all of which that have it
// agree on its value, the node is in that domain. So an NVLink clique or
// a rack-scale domain a GPU driver publishes per device is a level
// (topologyLevels takes its attribute name) like a node label. Devices
// that disagree name no domain. The labels are copied when any is added.
func DeviceDomains(labels map[string]string, devices []gang.Device, levels []string) map[string]string {
	out, copied := labels, false
	for _, key := range levels {
		if _, ok := labels[key]; ok {
			continue
		}
		value, agree := "", true
		for _, d := range devices {
			v, ok := d.Attributes[key]
			if !ok {
				continue
			}
			if value != "" && v != value {
				agree = false
				break
			}
			value = v
		}
		if value == "" || !agree {
			continue
		}
		if !copied {
			out, copied = make(map[string]string, len(labels)+1), true
			maps.Copy(out, labels)
		}
		out[key] = value
	}
	return out
}

// extended translates the pod's extended resources that a device class
// serves (its spec.extendedResourceName, or the class's implicit name)
// into device requests of that class; once kube-scheduler made and
// allocated the pod's claim for them, into exactly its devices. A
// resource a class serves is taken from DRA devices on every node, even
// one that also lists it in its allocatable (docs/dra.md).
func (x *DeviceIndex) extended(pod *corev1.Pod, src ClaimSource, cache *cel.Cache, out *PodClaims) {
	if !asksExtended(pod) {
		return
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	classes := src.Classes()
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		q := requests[name]
		if q.Value() <= 0 || !strings.Contains(string(name), "/") {
			continue
		}
		i := slices.IndexFunc(classes, func(c *resourceapi.DeviceClass) bool {
			return ptrOr(c.Spec.ExtendedResourceName) == string(name) || string(name) == ImplicitExtendedPrefix+c.Name
		})
		if i < 0 {
			continue
		}
		if out.Extended == nil {
			out.Extended = map[corev1.ResourceName]int64{}
		}
		out.Extended[name] = q.Value()
		if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
			if c, ok := src.Claim(pod.Namespace, st.ResourceClaimName); ok && c.Status.Allocation != nil {
				continue // its devices are asked below, once
			}
		}
		ch, why := x.choice(string(name), classes[i].Name, nil, resourceapi.DeviceAllocationModeExactCount, q.Value(), nil, src, cache)
		if why != "" {
			if out.Invalid == "" {
				out.Invalid = fmt.Sprintf("extended resource %s: %s", name, why)
			}
			continue
		}
		out.Requests = append(out.Requests, gang.DeviceRequest{Name: "extended resource " + string(name), Choices: []gang.DeviceChoice{*ch}})
	}
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil && len(out.Extended) > 0 {
		if c, ok := src.Claim(pod.Namespace, st.ResourceClaimName); ok && c.Status.Allocation != nil {
			if ids := allocatedIDs(c); len(ids) > 0 {
				out.Requests = append(out.Requests, gang.DeviceRequest{Name: c.Name, Choices: []gang.DeviceChoice{{Name: "allocated", Count: int64(len(ids)), Filter: gang.NewExactDevices(ids...)}}})
			}
		}
	}
}

// allocatedIDs are the devices a claim's allocation holds, but those it
// holds with admin access (which takes nothing from others).
func allocatedIDs(c *resourceapi.ResourceClaim) []string {
	var ids []string
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		ids = append(ids, r.Driver+"/"+r.Pool+"/"+r.Device)
	}
	return ids
}

// asksExtended reports whether a container of the pod asks for an
// extended resource (a name with a domain): most pods do not, and they
// are translated without listing the classes.
func asksExtended(pod *corev1.Pod) bool {
	has := func(cs []corev1.Container) bool {
		return slices.ContainsFunc(cs, func(c corev1.Container) bool {
			for name := range c.Resources.Requests {
				if strings.Contains(string(name), "/") {
					return true
				}
			}
			return false
		})
	}
	return has(pod.Spec.Containers) || has(pod.Spec.InitContainers)
}

// SharedClaims confines a pod to the nodes the allocations of the claims
// it names reach (a claim shared by a group: one IMEX channel, one
// device every pod uses): kube-scheduler's DynamicResources plugin turns
// the pod away from any other node. The pod's own filter (nil for any
// node) is kept inside. A claim not allocated yet adds nothing: it is
// allocated with the first pod that binds (docs/dra.md).
func SharedClaims(pod *corev1.Pod, inner gang.NodeFilter, src ClaimSource) (gang.NodeFilter, error) {
	f := inner
	for _, name := range sharedClaims(pod, src) {
		c, ok := src.Claim(pod.Namespace, name)
		if !ok || c.Status.Allocation == nil || c.Status.Allocation.NodeSelector == nil {
			continue
		}
		sel, err := nodeaffinity.NewNodeSelector(c.Status.Allocation.NodeSelector)
		if err != nil {
			return inner, fmt.Errorf("claim %s/%s: allocation's node selector: %v", c.Namespace, c.Name, err)
		}
		raw, err := json.Marshal(c.Status.Allocation.NodeSelector)
		if err != nil {
			return inner, err
		}
		key := "claim " + c.Namespace + "/" + c.Name + " " + string(raw)
		if f != nil {
			key = f.Key() + "|" + key
		}
		f = &claimFilter{inner: f, claim: c.Namespace + "/" + c.Name, sel: sel, key: key}
	}
	return f, nil
}

// claimFilter admits the nodes its inner filter admits (any, without
// one) that a shared claim's allocation reaches.
type claimFilter struct {
	inner gang.NodeFilter
	claim string
	sel   *nodeaffinity.NodeSelector
	key   string
}

func (f *claimFilter) reaches(n *gang.Node) bool {
	node := &corev1.Node{}
	node.Name, node.Labels = n.Name, n.Labels
	return f.sel.Match(node)
}

func (f *claimFilter) Admits(n *gang.Node) bool {
	return (f.inner == nil || f.inner.Admits(n)) && f.reaches(n)
}

func (f *claimFilter) Key() string { return f.key }

func (f *claimFilter) Why(nodes []*gang.Node) string {
	k := 0
	for _, n := range nodes {
		if f.reaches(n) {
			k++
		}
	}
	why := fmt.Sprintf("the allocation of its shared claim %s reaches %d of %d nodes", f.claim, k, len(nodes))
	if f.inner != nil {
		why = f.inner.Why(nodes) + "; " + why
	}
	return why
}

// namedClaim adds what a claim the pod names asks while it is not
// allocated; a claim that does not exist yet is waited for.
func (x *DeviceIndex) namedClaim(pod *corev1.Pod, name string, src ClaimSource, cache *cel.Cache, out *PodClaims) {
	c, ok := src.Claim(pod.Namespace, name)
	if !ok {
		out.Waiting = fmt.Sprintf("resource claim %s/%s does not exist", pod.Namespace, name)
		return
	}
	if c.Status.Allocation != nil {
		return
	}
	reqs, why := x.requests(c.Name, &c.Spec, src, cache)
	if why != "" && out.Invalid == "" {
		out.Invalid = fmt.Sprintf("claim %s: %s", c.Name, why)
	}
	out.Requests = append(out.Requests, reqs...)
}
