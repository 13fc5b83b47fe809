package plugin

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
)

// QueueSortName is a plugin that only sorts the scheduling queue, in
// fluence's order. kube-scheduler requires every profile of one process to
// sort its queue the same way (one queue serves them all). When fluence
// runs as the cluster's only scheduler, with a default-scheduler profile
// beside its own, both profiles name this plugin: naming "fluence" there
// would start a second, idle fluence (informers, core, metrics) for the
// default profile.
const QueueSortName = "FluenceQueueSort"

// QueueSort is the QueueSortName plugin.
type QueueSort struct{}

var _ fwk.QueueSortPlugin = QueueSort{}

// NewQueueSort is QueueSort's factory; it takes no arguments.
func NewQueueSort(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return QueueSort{}, nil
}

// Name returns QueueSortName.
func (QueueSort) Name() string { return QueueSortName }

// Less orders the queue as fluence does.
func (QueueSort) Less(a, b fwk.QueuedEntityInfo) bool { return lessEntities(a, b) }

// entityKey is what the queue order reads of an entity: a pod, or (with
// the GenericWorkload gate on, Kubernetes 1.37) a PodGroup that
// kube-scheduler queues in place of its pods.
type entityKey struct {
	priority  int32
	created   time.Time
	namespace string
	name      string
}

// The parts of kube-scheduler's queued entities the order reads.
type (
	queuedPod   interface{ GetPodInfo() fwk.PodInfo }
	queuedGroup interface {
		GetNamespace() string
		GetName() string
		GetCreationTimestamp() time.Time
	}
)

func keyOf(e fwk.QueuedEntityInfo) entityKey {
	switch v := e.(type) {
	case queuedPod:
		p := v.GetPodInfo().GetPod()
		return entityKey{corev1helpers.PodPriority(p), p.CreationTimestamp.Time, p.Namespace, p.Name}
	case queuedGroup:
		return entityKey{e.GetPriority(), v.GetCreationTimestamp(), v.GetNamespace(), v.GetName()}
	}
	return entityKey{priority: e.GetPriority(), created: e.GetTimestamp()}
}

// lessEntities orders the scheduling queue: higher priority first, then
// older objects, then by namespace and name. Only the object's own fields
// count, so an entity's place never moves while it sits in the
// scheduler's heap (requeues do not send a group's pods to the back, as
// the stock order by queue time would); the core places a group whole
// whatever order its pods come in.
func lessEntities(a, b fwk.QueuedEntityInfo) bool {
	ka, kb := keyOf(a), keyOf(b)
	if ka.priority != kb.priority {
		return ka.priority > kb.priority
	}
	if !ka.created.Equal(kb.created) {
		return ka.created.Before(kb.created)
	}
	if ka.namespace != kb.namespace {
		return ka.namespace < kb.namespace
	}
	return ka.name < kb.name
}
