package inspect

import "time"

// Kinds of the answers.
const (
	KindGroupList   = "GroupList"
	KindExplanation = "Explanation"
	KindQueue       = "Queue"
	KindNodeList    = "NodeList"
	KindGraph       = "Graph"
)

// TypeMeta names an answer's kind, as in every Kubernetes object.
type TypeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// Source says where an answer comes from.
type Source struct {
	// Profile is the scheduler profile (its schedulerName) whose fluence
	// answered.
	Profile string `json:"profile"`
	// Time is the moment the answer describes.
	Time time.Time `json:"time"`
}

// Resources are amounts as Kubernetes counts them.
type Resources struct {
	CPUMillis   int64 `json:"cpuMillis"`
	MemoryBytes int64 `json:"memoryBytes"`
	GPU         int64 `json:"gpu"`
	Pods        int64 `json:"pods"`
}

// GroupList lists pod groups, by namespace and key.
type GroupList struct {
	TypeMeta
	Source
	Items []Group `json:"items"`
}

// Group is one pod group.
type Group struct {
	Key       string `json:"key"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Source is how the group was found: label, podgroup, job, pod, ...
	Source string `json:"source"`
	Size   int32  `json:"size"`
	// State is gathering (waiting for its pods), queued, placed, rejected
	// or invalid; or gated: fluence has not seen the group, as the pods of
	// it that exist all wait for their scheduling gates.
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	Priority int32  `json:"priority"`
	// Pods counts its pods that exist and have not ended; Placed the
	// places its pods hold; Bound the pods bound there.
	Pods   int `json:"pods"`
	Placed int `json:"placed"`
	Bound  int `json:"bound"`
	// Gated counts its pods that exist but wait for their scheduling gates
	// (spec.schedulingGates), which Pods leaves out until the gates are
	// lifted. Gates names those gates when fluence has not seen the
	// group (state gated).
	Gated int      `json:"gated,omitempty"`
	Gates []string `json:"gates,omitempty"`
	// Held counts its pods that wait out of the scheduling queue until the
	// group has all its pods (a labelled group's, by fluence's PreEnqueue).
	Held int `json:"held,omitempty"`
	// WaitsFor names its pod that waits for an object the scheduler has
	// not seen (a resource claim, or its template) and what that is.
	WaitsFor string `json:"waitsFor,omitempty"`
	// FirstSeen is when the scheduler first saw the group; WaitSeconds how
	// long it waited: until it started, or until now.
	FirstSeen   time.Time  `json:"firstSeen"`
	WaitSeconds float64    `json:"waitSeconds"`
	Started     *time.Time `json:"started,omitempty"`
	// PlannedEnd is the end the engine plans for (its declared duration or
	// the default), extended while its pods still run.
	PlannedEnd *time.Time `json:"plannedEnd,omitempty"`
	// ReservedStart is the start the engine reserved for a waiting group.
	ReservedStart *time.Time `json:"reservedStart,omitempty"`
	// HeldUntil is when a group a node turned away is placed again.
	HeldUntil *time.Time `json:"heldUntil,omitempty"`
	// Nodes are the nodes its placed pods are on.
	Nodes []string `json:"nodes,omitempty"`
	// Domains are the topology domains (label=value) it runs in or waits
	// for, when it asked for one.
	Domains []string `json:"domains,omitempty"`
	// Roles are a multi-role group's roles, each with its least count;
	// absent for a group of one role.
	Roles     []Role `json:"roles,omitempty"`
	Placement []Slot `json:"placement,omitempty"`
	// Waiting is what its pods without a place ask in all.
	Waiting *Resources `json:"waiting,omitempty"`
}

// Role is one role of a multi-role group: the least count of its pods
// that start with the rest, its pods that exist and have not ended, and
// those holding a place.
type Role struct {
	Name   string `json:"name"`
	Min    int32  `json:"min"`
	Pods   int    `json:"pods"`
	Placed int    `json:"placed"`
}

// Slot is one placed pod.
type Slot struct {
	Pod  string `json:"pod,omitempty"`
	Node string `json:"node"`
	// State is placed, reserved, bound, done or vacant.
	State string `json:"state"`
}

// Explanation says why a group is where it is, in words and numbers.
type Explanation struct {
	TypeMeta
	Source
	Group Group `json:"group"`
	// Verdict is placed, reserved, waiting, blocked, held, gathering,
	// rejected, invalid or gated (StateGated).
	Verdict string   `json:"verdict"`
	Summary string   `json:"summary"`
	Details []string `json:"details,omitempty"`
	// Short lists what the group asks more of than there is.
	Short []Shortfall `json:"short,omitempty"`
	// ExpectedStart is the start the engine reserved for it.
	ExpectedStart *time.Time `json:"expectedStart,omitempty"`
	// Position is its place in the queue (from 1) of Queued requests.
	Position int `json:"position,omitempty"`
	Queued   int `json:"queued"`
	// Ahead lists the groups queued before it; Freeing the running groups
	// planned to end by its expected start.
	Ahead   []string `json:"ahead,omitempty"`
	Freeing []string `json:"freeing,omitempty"`
}

// Shortfall is one resource a group asks more of than there is: free now
// on the nodes its pods may use (a waiting group), or on the whole cluster
// (a rejected one). CPU is in millicores, memory in bytes.
type Shortfall struct {
	Resource string `json:"resource"`
	Need     int64  `json:"need"`
	Have     int64  `json:"have"`
	PerPod   int64  `json:"perPod"`
	PerNode  int64  `json:"perNode"`
}

// Queue is the queue: its policy and the waiting requests in the order the
// engine considers them.
type Queue struct {
	TypeMeta
	Source
	Policy      string `json:"policy"`
	MatchPolicy string `json:"matchPolicy"`
	// QueueDepth is how many requests one loop considers; Reservations
	// how many of them may hold a reservation.
	QueueDepth   int          `json:"queueDepth"`
	Reservations int          `json:"reservations"`
	Entries      []QueueEntry `json:"entries"`
}

// QueueEntry is one waiting request: the pods of a group still to place.
type QueueEntry struct {
	// Position is its place in the whole queue, from 1 (a namespace's
	// listing keeps the positions).
	Position  int    `json:"position"`
	Group     string `json:"group"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Priority  int32  `json:"priority"`
	Pods      int    `json:"pods"`
	// State is pending, reserved or blocked.
	State string `json:"state"`
	// Queued is its place in line: when it was first queued.
	Queued        time.Time  `json:"queued"`
	ReservedStart *time.Time `json:"reservedStart,omitempty"`
	HeldUntil     *time.Time `json:"heldUntil,omitempty"`
	Reason        string     `json:"reason,omitempty"`
}

// NodeList lists the nodes by name.
type NodeList struct {
	TypeMeta
	Source
	// Levels are the topology levels of the graph, outermost first, by
	// their vertex type (zone, block, rack): the levels of Node.Domains.
	Levels []string `json:"levels,omitempty"`
	Items  []Node   `json:"items"`
}

// Node is one node and what is held on it.
type Node struct {
	Name string `json:"name"`
	Zone string `json:"zone"`
	Rack string `json:"rack,omitempty"`
	// Domains is the node's domain at each of NodeList.Levels, from its
	// labels as they are now ("_unknown" where it has none).
	Domains []string `json:"domains,omitempty"`
	// Down: cordoned or not Ready. Overloaded: pods others bound hold more
	// than the engine had free; nothing new goes there until it fits.
	Down       bool `json:"down,omitempty"`
	Overloaded bool `json:"overloaded,omitempty"`
	// Allocated is everything held: fluence's groups and the pods others
	// bound, which Foreign counts alone.
	Allocatable Resources   `json:"allocatable"`
	Allocated   Resources   `json:"allocated"`
	Foreign     Resources   `json:"foreign"`
	Groups      []NodeGroup `json:"groups,omitempty"`
	// Devices counts the node's DRA devices in the graph, and
	// DevicesAllocated those a claim's allocation holds, whoever's pod
	// uses it; both absent on a node without devices.
	Devices          int64 `json:"devices,omitempty"`
	DevicesAllocated int64 `json:"devicesAllocated,omitempty"`
}

// NodeGroup is how many pods of a group are on a node.
type NodeGroup struct {
	Group string `json:"group"`
	Pods  int    `json:"pods"`
}

// Graph is the shape of the resource graph the engine decides on.
type Graph struct {
	TypeMeta
	Source
	// Built: there is a graph. Stale: the nodes changed since; it is
	// rebuilt before the next decision.
	Built bool `json:"built"`
	Stale bool `json:"stale,omitempty"`
	// Arriving counts new nodes not in the graph yet: nodes arriving
	// together join it at one rebuild, within a second.
	Arriving int           `json:"arriving,omitempty"`
	Rebuilds int64         `json:"rebuilds"`
	Vertices int           `json:"vertices"`
	Types    []VertexCount `json:"types,omitempty"`
	// Levels are the topology levels between the cluster and the nodes,
	// outermost first.
	Levels []GraphLevel `json:"levels,omitempty"`
	Root   *Vertex      `json:"root,omitempty"`
}

// GraphLevel is one topology level: a vertex of type Type per value of
// the node label Key. Unlabelled nodes lack the label and are under the
// domain named UnknownDomain.
type GraphLevel struct {
	Key           string `json:"key"`
	Type          string `json:"type"`
	Domains       int    `json:"domains"`
	Unlabelled    int    `json:"unlabelled"`
	UnknownDomain string `json:"unknownDomain"`
}

// VertexCount counts the vertices of one type and their summed size.
type VertexCount struct {
	Type     string `json:"type"`
	Vertices int    `json:"vertices"`
	Size     int64  `json:"size"`
}

// Vertex is a vertex with its children; Count > 1 stands for that many
// identical leaves (a node's GPUs).
type Vertex struct {
	Type     string    `json:"type"`
	Name     string    `json:"name"`
	Size     int64     `json:"size"`
	Unit     string    `json:"unit,omitempty"`
	Count    int       `json:"count,omitempty"`
	Down     bool      `json:"down,omitempty"`
	Children []*Vertex `json:"children,omitempty"`
}

// Status is an error answer, shaped as a Kubernetes Status so that
// Kubernetes clients read it as one.
type Status struct {
	TypeMeta
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
	Code    int    `json:"code"`
}

// MessagePrefix starts the message of every Status the scheduler writes,
// so that a client tells the scheduler's refusals from the API server's.
const MessagePrefix = "fluence: "

// NewStatus returns the failure Status for an HTTP code.
func NewStatus(code int, reason, message string) Status {
	return Status{TypeMeta: TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure", Message: MessagePrefix + message, Reason: reason, Code: code}
}
