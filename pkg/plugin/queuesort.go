package plugin

import (
	"context"

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
func (QueueSort) Less(a, b fwk.QueuedPodInfo) bool { return lessPods(a, b) }

// lessPods orders the scheduling queue: higher priority first, then older
// pods, then by namespace and name. Only the pod's own fields count, so a
// pod's place never moves while it sits in the scheduler's heap (requeues
// do not send a group's pods to the back, as the stock order by queue time
// would); the core places a group whole whatever order its pods come in.
func lessPods(a, b fwk.QueuedPodInfo) bool {
	pa, pb := a.GetPodInfo().GetPod(), b.GetPodInfo().GetPod()
	if x, y := corev1helpers.PodPriority(pa), corev1helpers.PodPriority(pb); x != y {
		return x > y
	}
	if ta, tb := pa.CreationTimestamp.Time, pb.CreationTimestamp.Time; !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if pa.Namespace != pb.Namespace {
		return pa.Namespace < pb.Namespace
	}
	return pa.Name < pb.Name
}
