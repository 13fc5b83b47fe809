package match

import "fmt"

// Status is the outcome of an operation.
type Status uint8

const (
	Allocated Status = iota + 1
	Reserved
	Busy
	Unsatisfiable
	Satisfiable
	Invalid
	Canceled
)

var statusNames = [...]string{"", "ALLOCATED", "RESERVED", "BUSY", "UNSATISFIABLE", "SATISFIABLE", "INVALID", "CANCELED"}

func (s Status) String() string {
	if int(s) < len(statusNames) && s != 0 {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Op selects what Match does.
type Op uint8

const (
	// Allocate at now; Busy on any failure.
	Allocate Op = iota + 1
	// AllocateWithSatisfiability allocates at now; on failure tells Busy
	// from Unsatisfiable.
	AllocateWithSatisfiability
	// AllocateOrElseReserve allocates at now, or reserves at the earliest
	// time the job fits; Unsatisfiable when it never can.
	AllocateOrElseReserve
	// Satisfiability checks the request against the empty, all-up graph.
	Satisfiability
)

var opNames = [...]string{"", "allocate", "allocate_with_satisfiability", "allocate_orelse_reserve", "satisfiability"}

func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// ParseOp maps resource-query's operation names to an Op.
func ParseOp(s string) (Op, bool) {
	for i, n := range opNames {
		if n != "" && n == s {
			return Op(i), true
		}
	}
	return 0, false
}

// NodeUsage is what a job holds on one node.
type NodeUsage struct {
	Vertex int32
	Name   string
	Core   int64 // core vertices
	GPU    int64 // gpu vertices
	Memory int64 // summed size of memory units
	// Whole is true when the job holds the node exclusively, with
	// everything below it.
	Whole bool
}

// Result is the outcome of Match.
type Result struct {
	Status Status
	JobID  int64
	// At is the start time; meaningful for Allocated and Reserved.
	At       int64
	Duration int64
	Nodes    []NodeUsage // in vertex order
	// Slots lists every slot taken, in jobspec order (all slots of the
	// first slot request, then the next): which node each one landed on.
	// A slot is one task, or one pod of a group.
	Slots []SlotPlacement
	// Reason explains a failure in one line; Explain has the details.
	Reason  string
	Explain *Explain
}

// OK reports whether the job was placed (allocated or reserved).
func (r *Result) OK() bool { return r.Status == Allocated || r.Status == Reserved }

// SlotPlacement is where one slot landed.
type SlotPlacement struct {
	Label  string
	Node   string
	Vertex int32 // the node vertex (or the slot's anchor, in graphs without nodes)
}
