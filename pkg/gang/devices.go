package gang

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// TypeDevice is the vertex type of a device a node offers through
// Dynamic Resource Allocation: one vertex per device, under its node.
const TypeDevice = "device"

// devicePrefix begins the vertex properties that mark which devices a
// request admits (deviceMarks). A Kubernetes label key has at most one
// slash, and a DRA attribute name none after its domain, so no node
// label or device attribute can take its place.
const devicePrefix = "fluence//admits-"

// DeviceIDProperty is the property of a device vertex that holds the
// device's ID (driver/pool/device).
const DeviceIDProperty = "fluence//device"

// Device is one device a node offers: a GPU, a NIC, a partition of a GPU.
// The translating layer names it and reads its attributes; which devices
// a pod may take is decided by the pod's DeviceFilters, which see these.
type Device struct {
	// ID is driver/pool/device, unique in the cluster: DRA names an
	// allocated device so.
	ID string
	// Attributes are the device's attributes and capacities as strings,
	// keyed by their qualified names. They are the device vertex's
	// properties (kubectl fluence graph shows them).
	Attributes map[string]string
	// Holder is the claim (namespace/name) whose allocation holds the
	// device; "" while it is free. The core counts a held device as its
	// node's foreign load unless the claim is one of a pod that holds a
	// slot there (whose allocation counts it already).
	Holder string
}

// DeviceRequest is one request of a pod's resource claims: so many
// devices a filter admits, or, when it lists several choices
// (firstAvailable), those of the first choice that can be met.
type DeviceRequest struct {
	// Name is claim/request, for messages.
	Name    string
	Choices []DeviceChoice
}

// DeviceChoice is one way to meet a request.
type DeviceChoice struct {
	// Name is the request's, or the subrequest's, name.
	Name string
	// Count is how many devices, each on the pod's node.
	Count int64
	// Filter says which devices qualify.
	Filter DeviceFilter
}

// DeviceFilter says which devices a request may take: its device class
// and selectors, evaluated by the translating layer's own rules.
type DeviceFilter interface {
	Admits(d *Device) bool
	// Key is equal for filters that admit the same devices.
	Key() string
	// Describe says which devices in words ("gpu.example.com devices
	// with memory >= 80Gi"), for explanations.
	Describe() string
}

// ExactDevices admits the devices it names, by ID, and no others: what
// a pod whose claims are allocated holds. Sorted.
type ExactDevices []string

// NewExactDevices returns the filter of the named devices.
func NewExactDevices(ids ...string) ExactDevices {
	e := slices.Clone(ids)
	slices.Sort(e)
	return slices.Compact(e)
}

func (e ExactDevices) Admits(d *Device) bool {
	_, ok := slices.BinarySearch(e, d.ID)
	return ok
}

func (e ExactDevices) Key() string { return "exact:" + strings.Join(e, ",") }

func (e ExactDevices) Describe() string {
	if len(e) == 1 {
		return "device " + e[0]
	}
	return fmt.Sprintf("the %d devices %s", len(e), strings.Join(e, ", "))
}

// sameDevices reports whether two lists offer the same devices, in the
// same order, with the same attributes: anything else is a new graph.
func sameDevices(a, b []Device) bool {
	return slices.EqualFunc(a, b, func(x, y Device) bool {
		return x.ID == y.ID && maps.Equal(x.Attributes, y.Attributes)
	})
}
