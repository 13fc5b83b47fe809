package resource

import "strconv"

// Status is the scheduling status of a vertex. A down vertex and everything
// below it is skipped by allocation, but still counts for satisfiability.
type Status uint8

const (
	Up Status = iota
	Down
)

func (s Status) String() string {
	if s == Down {
		return "down"
	}
	return "up"
}

// TypeID is a dense small integer naming a vertex type within one Graph.
// Matching compares TypeIDs, never strings.
type TypeID uint16

// Vertex is one resource pool. Fields follow Fluxion's vertex schema; see
// docs/reference/fluxion.md section 1.2.
type Vertex struct {
	Type     TypeID
	Status   Status
	Basename string
	// Name is the vertex name; empty means the default Basename + ID.
	Name   string
	ID     int64 // -1 when the vertex has no id
	UniqID int64 // unique in the graph; children are ordered by it
	Rank   int64 // Flux broker rank, -1 when none
	Size   int64 // pool quantity, at least 1
	Unit   string
	// Properties are RFC 31 properties (node labels, in Kubernetes terms).
	// Nil for most vertices.
	Properties map[string]string
	// Paths holds paths in subsystems other than containment, kept only so a
	// JGF round trip does not lose them. Nil for most vertices.
	Paths map[string]string
}

// DisplayName returns Name, or the Fluxion default basename + id.
func (v *Vertex) DisplayName() string {
	if v.Name != "" {
		return v.Name
	}
	if v.ID < 0 {
		return v.Basename
	}
	return v.Basename + strconv.FormatInt(v.ID, 10)
}
