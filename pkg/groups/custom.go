package groups

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The custom resources the resolver reads, each from an informer.
var (
	PodGroupResource = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	JobSetResource   = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	MPIJobResource   = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	// VolcanoPodGroupResource is Volcano's PodGroup.
	VolcanoPodGroupResource = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
)

var watched = []schema.GroupVersionResource{PodGroupResource, JobSetResource, MPIJobResource, VolcanoPodGroupResource}

// DiscoveryInterval is how often CustomResources asks the API server which
// of the watched resources it serves.
const DiscoveryInterval = 30 * time.Second

// recheckAfter is the least time between two discovery checks when a
// lookup of a resource that is not served brings the next one forward.
const recheckAfter = 5 * time.Second

// CustomResources serves PodGroups, JobSets and MPIJobs from informers, one
// per resource, each running only while the API server serves its
// resource: Run asks discovery at once, every DiscoveryInterval, and sooner
// (at most every 5 s) after a lookup found its resource not served. An
// informer starts when its resource appears and stops when it goes. A
// cluster without these CRDs is never asked to list or watch them.
type CustomResources struct {
	dyn   dynamic.Interface
	disc  discovery.ServerResourcesInterface
	log   klog.Logger
	nudge chan struct{}

	// onPodGroup, when set, hears of every scheduler-plugins PodGroup
	// added to an informer's cache (its namespace and name).
	onPodGroup func(ns, name string)
	// onSpec, when set, hears of every watched object whose spec changed.
	onSpec func(ns, name string)

	mu      sync.Mutex
	checked bool // the first discovery check is done
	// legacy: the scheduling.k8s.io PodGroup versions the API server
	// serves that this build does not read, as of the last check (only
	// asked while no version it reads is served).
	legacy  []string
	lastAPI string                                      // what the last check found, as logged
	initial []schema.GroupVersionResource               // served at the first check
	running map[schema.GroupVersionResource]*crInformer // served, being watched
}

type crInformer struct {
	inf  cache.SharedIndexInformer
	stop context.CancelFunc
}

// NewCustomResources returns CustomResources that list and watch through
// dyn what disc says the API server serves. Nothing is read before Run.
func NewCustomResources(dyn dynamic.Interface, disc discovery.ServerResourcesInterface, log klog.Logger) *CustomResources {
	return &CustomResources{dyn: dyn, disc: disc, log: log, nudge: make(chan struct{}, 1),
		running: map[schema.GroupVersionResource]*crInformer{}}
}

// OnPodGroupAdded makes f hear of every scheduler-plugins PodGroup the
// informer adds; call it before Run.
func (c *CustomResources) OnPodGroupAdded(f func(ns, name string)) { c.onPodGroup = f }

// OnSpecChanged makes f hear of every watched object (PodGroups of both
// kinds, JobSets, MPIJobs) whose spec changes; call it before Run.
func (c *CustomResources) OnSpecChanged(f func(ns, name string)) { c.onSpec = f }

// Run checks discovery and starts or stops informers until ctx ends.
func (c *CustomResources) Run(ctx context.Context) {
	t := time.NewTicker(DiscoveryInterval)
	defer t.Stop()
	for {
		last := time.Now()
		c.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.nudge:
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(last.Add(recheckAfter))):
			}
		}
	}
}

// Synced reports whether the first discovery check is done and the
// informers it started have listed their resource. Informers started later
// are not waited for: until they sync, lookups fail as retryable.
func (c *CustomResources) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.checked {
		return false
	}
	for _, gvr := range c.initial {
		if w, ok := c.running[gvr]; ok && !w.inf.HasSynced() {
			return false
		}
	}
	return true
}

// refresh asks discovery which watched resources are served and starts or
// stops their informers to match. A resource whose check fails keeps its
// state until the next check.
func (c *CustomResources) refresh(ctx context.Context) {
	for _, gvr := range watched {
		served, err := c.served(gvr)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Info("fluence: cannot tell whether the API server serves a resource; asking again later", "resource", resourceName(gvr), "err", err)
			}
			continue
		}
		c.mu.Lock()
		w, running := c.running[gvr]
		switch {
		case served && !running:
			c.running[gvr] = c.start(ctx, gvr)
			c.log.V(1).Info("fluence: watching", "resource", resourceName(gvr))
		case !served && running:
			w.stop()
			delete(c.running, gvr)
			c.log.Info("fluence: the API server no longer serves a resource; stopped watching it", "resource", resourceName(gvr))
		}
		c.mu.Unlock()
	}
	legacy := c.legacyNative()
	c.mu.Lock()
	c.legacy = legacy
	if api := c.gangAPI(); api != c.lastAPI {
		c.lastAPI = api
		c.log.Info("fluence: Kubernetes gang API (spec.schedulingGroup PodGroups)", "found", api)
	}
	if !c.checked {
		c.checked = true
		for gvr := range c.running {
			c.initial = append(c.initial, gvr)
		}
	}
	c.mu.Unlock()
}

// gangAPI says which PodGroup version of scheduling.k8s.io fluence reads,
// for the log; c.mu is held.
func (c *CustomResources) gangAPI() string {
	if v, ok := c.watchedNative(); ok {
		return v.gvr.GroupVersion().String()
	}
	if len(c.legacy) > 0 {
		return "none this build reads: the API server serves " + strings.Join(c.legacy, ", ") + " (fluence reads " + nativeVersions[0].gvr.GroupVersion().String() + ")"
	}
	return "none: the API server does not serve " + nativeVersions[0].gvr.GroupVersion().String() + " PodGroups (Kubernetes 1.37 serves them with the gate GenericWorkload); groups come from labels and workloads"
}

// legacyNative returns the PodGroup versions of scheduling.k8s.io served
// that this build does not read, when it reads none that is served.
func (c *CustomResources) legacyNative() []string {
	c.mu.Lock()
	_, reads := c.watchedNative()
	c.mu.Unlock()
	if reads {
		return nil
	}
	var out []string
	for _, gvr := range legacyNativeVersions {
		if ok, err := c.served(gvr); err == nil && ok {
			out = append(out, gvr.GroupVersion().String())
		}
	}
	return out
}

func (c *CustomResources) served(gvr schema.GroupVersionResource) (bool, error) {
	list, err := c.disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

func (c *CustomResources) start(ctx context.Context, gvr schema.GroupVersionResource) *crInformer {
	inf := dynamicinformer.NewFilteredDynamicInformer(c.dyn, gvr, metav1.NamespaceAll, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	// Only labels, annotations, the UID and the spec are read.
	_ = inf.SetTransform(func(o any) (any, error) {
		if u, ok := o.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return o, nil
	})
	if gvr == PodGroupResource && c.onPodGroup != nil {
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				c.onPodGroup(u.GetNamespace(), u.GetName())
			}
		}})
	}
	if c.onSpec != nil {
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
			a, okA := o.(*unstructured.Unstructured)
			b, okB := n.(*unstructured.Unstructured)
			// Compared whole: Kubernetes 1.37 does not move a PodGroup's
			// metadata.generation when its spec changes.
			if okA && okB && !equality.Semantic.DeepEqual(a.Object["spec"], b.Object["spec"]) {
				c.onSpec(b.GetNamespace(), b.GetName())
			}
		}})
	}
	ictx, cancel := context.WithCancel(ctx)
	go inf.RunWithContext(ictx)
	return &crInformer{inf: inf, stop: cancel}
}

// get returns the object ns/name of gvr from its informer's cache; the
// object must not be modified. When it is not returned, why says so, to
// follow the object's name in a message: it is not served, the cache is
// not synced yet, or the object does not exist. Each is retryable.
func (c *CustomResources) get(gvr schema.GroupVersionResource, ns, name string) (obj *unstructured.Unstructured, why string) {
	c.mu.Lock()
	w, running := c.running[gvr]
	checked := c.checked
	c.mu.Unlock()
	switch {
	case !running && !checked:
		return nil, "is not in the informer cache yet"
	case !running:
		select {
		case c.nudge <- struct{}{}:
		default:
		}
		return nil, "not found: the API server does not serve " + resourceName(gvr)
	case !w.inf.HasSynced():
		return nil, "is not in the informer cache yet"
	}
	o, exists, err := w.inf.GetStore().GetByKey(ns + "/" + name)
	if err != nil {
		return nil, "cannot be read from the informer cache: " + err.Error()
	}
	u, ok := o.(*unstructured.Unstructured)
	if !exists || !ok {
		return nil, "not found"
	}
	return u, ""
}

// list returns the objects of gvr in namespace ns from its informer's
// cache, which must not be modified; when it cannot, why says so as get's
// does. served is false when the API server does not serve gvr (as of the
// last discovery check), which is no error.
func (c *CustomResources) list(gvr schema.GroupVersionResource, ns string) (objs []*unstructured.Unstructured, served bool, why string) {
	c.mu.Lock()
	w, running := c.running[gvr]
	checked := c.checked
	c.mu.Unlock()
	switch {
	case !running && !checked:
		return nil, true, "is not in the informer cache yet"
	case !running:
		return nil, false, ""
	case !w.inf.HasSynced():
		return nil, true, "is not in the informer cache yet"
	}
	items, err := w.inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	if err != nil {
		return nil, true, "cannot be read from the informer cache: " + err.Error()
	}
	for _, o := range items {
		if u, ok := o.(*unstructured.Unstructured); ok {
			objs = append(objs, u)
		}
	}
	// The cache's order is a map's: sorted, the roles and messages built
	// from the list do not change from one read to the next.
	slices.SortFunc(objs, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return objs, true, ""
}

// serves reports whether the API server serves gvr, as of the last
// discovery check (false before the first).
func (c *CustomResources) serves(gvr schema.GroupVersionResource) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.running[gvr]
	return ok
}

// resourceName is how a resource is named in kubectl and in messages:
// podgroups.scheduling.x-k8s.io/v1alpha1.
func resourceName(gvr schema.GroupVersionResource) string {
	return gvr.Resource + "." + gvr.Group + "/" + gvr.Version
}
