package matchcli

// Response is the one JSON object printed per command. Field order and
// null-versus-absent follow the command contract in the package doc:
// jobid and at are always present (null when they do not apply), nodes
// only for placed jobs, reason only for failures.
type Response struct {
	Cmd    string                `json:"cmd"`
	JobID  *int64                `json:"jobid"`
	Status string                `json:"status"`
	At     *int64                `json:"at"`
	Nodes  map[string]NodeCounts `json:"nodes,omitempty"`
	Reason string                `json:"reason,omitempty"`
	Stats  *Stats                `json:"stats,omitempty"`
}

// NodeCounts is what a job holds on one node: core and gpu vertices and the
// summed size of memory vertices.
type NodeCounts struct {
	Core   int64 `json:"core"`
	GPU    int64 `json:"gpu"`
	Memory int64 `json:"memory"`
}

// Stats answers `stat`.
type Stats struct {
	Vertices     int     `json:"V"`
	Edges        int     `json:"E"`
	Policy       string  `json:"policy"`
	Jobs         int     `json:"jobs"`
	MatchOK      int64   `json:"match_succeeded"`
	MatchFailed  int64   `json:"match_failed"`
	Reservations int     `json:"reservations"`
	Visited      int64   `json:"visited_vertices"`
	MinMs        float64 `json:"min_match_ms"`
	MaxMs        float64 `json:"max_match_ms"`
	AvgMs        float64 `json:"avg_match_ms"`
}

func i64(v int64) *int64 { return &v }
