package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Workload files come in two YAML formats, told apart by their keys:
//
//   - the experiment format of pkg/sim/experiments/*.yaml: a top-level
//     `jobs` mapping with `types` (a loop that generates the job list) plus
//     the measured outcomes; see workload_experiment.go;
//   - the native format for users and synthetic workloads: explicit
//     `cluster.nodes` and `groups`; see workload_native.go and
//     docs/sim-workload.md.
//
// Both are decoded by walking yaml.Node trees rather than by decoding into
// structs: that is what lets every error name the field's path
// (groups[3].pods) instead of a line number and a Go type.

// LoadOptions control how a workload file becomes a Workload.
type LoadOptions struct {
	// Seed seeds the sampling of release delays given as a {min, max}
	// range, so the same file and seed always give the same workload.
	Seed uint64
}

// UnmodelledMemory is the memory given to a node whose memory the workload
// does not state. It is large enough never to bind (64 TiB, above any real
// node) yet small enough that a cluster total stays inside int64 for more
// than 100,000 nodes.
const UnmodelledMemory int64 = 1 << 46

// Limits that keep a hostile or mistyped file from allocating without
// bound before it is rejected. They are 20-100x the simulator's scale
// case (10,000 groups, 1,000 nodes, ~135,000 pods).
const (
	wlMaxNodes        = 100_000
	wlMaxPodsPerGroup = 100_000
	wlMaxPodsTotal    = 2_000_000
	wlMaxGroups       = 200_000
	wlMaxErrors       = 20
	wlMaxYAMLNodes    = 2_000_000
	wlMaxCPUCores     = 1e12 // per quantity; millicores stay within int64
	wlMaxMemoryBytes  = 1e18
	wlMaxGPUs         = 1e9
	wlMaxAliasDepth   = 64
	wlMaxBytes        = 64 << 20
)

// WorkloadError is one malformed field of a workload file.
type WorkloadError struct {
	Source string // file name, or "" for in-memory data
	Path   string // e.g. groups[3].pods; "" for the document as a whole
	Msg    string
}

func (e *WorkloadError) Error() string {
	var b strings.Builder
	b.WriteString("workload")
	if e.Source != "" {
		b.WriteString(" " + e.Source)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadWorkload reads a workload file in either format. Errors name the
// file and the path of every malformed field.
func LoadWorkload(path string, opts LoadOptions) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	return parseWorkload(data, filepath.Base(path), opts)
}

// ParseWorkload parses workload YAML in either format (see LoadWorkload).
func ParseWorkload(data []byte, opts LoadOptions) (*Workload, error) {
	return parseWorkload(data, "", opts)
}

func parseWorkload(data []byte, src string, opts LoadOptions) (w *Workload, err error) {
	c := &yctx{src: src}
	if len(data) > wlMaxBytes {
		return nil, c.fatal("", "file is larger than %d MiB", wlMaxBytes>>20)
	}
	// The YAML library is not ours: a panic inside it on hostile input
	// must become an ordinary error, not take the caller down.
	defer func() {
		if r := recover(); r != nil {
			w, err = nil, c.fatal("", "invalid YAML: parser failure: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, c.fatal("", "empty document")
		}
		return nil, c.fatal("", "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, c.fatal("", "empty document")
	}
	if n := ycountNodes(doc.Content[0], 0); n > wlMaxYAMLNodes {
		return nil, c.fatal("", "document has more than %d values after expanding aliases", wlMaxYAMLNodes)
	}
	root := doc.Content[0]
	if yderef(root).Kind != yaml.MappingNode {
		return nil, c.fatal("", "the document must be a mapping with either jobs.types (experiment format) or groups (native format)")
	}
	if isExperiment(yderef(root)) {
		w = parseExperiment(c, root, opts)
	} else {
		w = parseNative(c, root)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	if w.Name == "" {
		w.Name = strings.TrimSuffix(src, filepath.Ext(src))
		if w.Name == "" {
			w.Name = "workload"
		}
	}
	return w, nil
}

// isExperiment: the experiment format is the one with jobs.types.
func isExperiment(root *yaml.Node) bool {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "jobs" {
			jobs := yderef(root.Content[i+1])
			if jobs.Kind != yaml.MappingNode {
				return false
			}
			for k := 0; k+1 < len(jobs.Content); k += 2 {
				if jobs.Content[k].Value == "types" {
					return true
				}
			}
		}
	}
	return false
}

// NeedsReleaseCalibration reports whether the workload's release delays
// are unknown and must be calibrated: every group has ReleaseDelay 0 (the
// experiment file gave release_delay_seconds: null) and a measured fluence
// makespan exists to calibrate against. run10 is the case: its jobs ran
// ~2 s but held their nodes for as long as the harness took to notice and
// delete them, which was not logged (docs/reference/experiments.md 5.2). Use
// CalibrateReleaseDelay with the measured makespan as the target.
func NeedsReleaseCalibration(w *Workload) bool {
	if w == nil || len(w.Groups) == 0 {
		return false
	}
	for i := range w.Groups {
		if w.Groups[i].ReleaseDelay != 0 {
			return false
		}
	}
	m, ok := w.Measured["fluence"]
	return ok && m.Makespan != nil
}

// ClusterFromSpec builds nodes identical nodes named node0..nodeN-1 with
// the given CPU (millicores), memory (bytes) and GPUs. A memory of 0 or
// less means memory is not modelled: UnmodelledMemory is used so that it
// never binds.
func ClusterFromSpec(nodes int, cpu, memory, gpu int64) Cluster {
	if memory <= 0 {
		memory = UnmodelledMemory
	}
	c := Cluster{Nodes: make([]NodeSpec, 0, max(nodes, 0))}
	for i := range nodes {
		c.Nodes = append(c.Nodes, NodeSpec{Name: "node" + strconv.Itoa(i), CPU: cpu, Memory: memory, GPU: gpu})
	}
	return c
}

// ---- YAML walking ---------------------------------------------------------

// yctx collects errors while a document is walked, so one pass reports
// every malformed field rather than only the first.
type yctx struct {
	src  string
	errs []error
	more int
}

func (c *yctx) errf(path, format string, args ...any) {
	if len(c.errs) >= wlMaxErrors {
		c.more++
		return
	}
	c.errs = append(c.errs, &WorkloadError{Source: c.src, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *yctx) fatal(path, format string, args ...any) error {
	return &WorkloadError{Source: c.src, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// err returns nil, the single error (so errors.As finds a *WorkloadError
// directly), or all of them joined one per line.
func (c *yctx) err() error {
	switch {
	case len(c.errs) == 0:
		return nil
	case len(c.errs) == 1 && c.more == 0:
		return c.errs[0]
	}
	errs := c.errs
	if c.more > 0 {
		errs = append(errs[:len(errs):len(errs)], &WorkloadError{Source: c.src, Msg: fmt.Sprintf("and %d more errors", c.more)})
	}
	return errors.Join(errs...)
}

func ykey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func yidx(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// yderef follows aliases (*anchor) to the node they stand for.
func yderef(n *yaml.Node) *yaml.Node {
	for d := 0; n != nil && n.Kind == yaml.AliasNode && d < wlMaxAliasDepth; d++ {
		n = n.Alias
	}
	if n == nil || n.Kind == yaml.AliasNode {
		// A dangling or absurdly deep alias reads as null.
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return n
}

// ycountNodes counts values with aliases expanded, saturating, so an alias
// "bomb" is refused before anything walks its expansion.
func ycountNodes(n *yaml.Node, depth int) int {
	if n == nil || depth > wlMaxAliasDepth*4 {
		return 1
	}
	if n.Kind == yaml.AliasNode {
		return 1 + ycountNodes(n.Alias, depth+1)
	}
	total := 1
	for _, k := range n.Content {
		total += ycountNodes(k, depth+1)
		if total > wlMaxYAMLNodes {
			return total
		}
	}
	return total
}

func yisNull(n *yaml.Node) bool {
	n = yderef(n)
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// ymap is a decoded mapping: its keys in document order and their values.
type ymap struct {
	path string
	keys []string
	vals map[string]*yaml.Node
}

// get returns the value of key, or nil if it is absent or null (both mean
// "not given" in either format).
func (m ymap) get(key string) *yaml.Node {
	n := m.vals[key]
	if n == nil || yisNull(n) {
		return nil
	}
	return yderef(n)
}

// mapping decodes a mapping node. With known set, other keys are errors
// (the native format); with known nil every key is accepted (the
// experiment format carries many informational keys).
func (c *yctx) mapping(n *yaml.Node, path string, known []string) (ymap, bool) {
	m := ymap{path: path, vals: map[string]*yaml.Node{}}
	n = yderef(n)
	if n.Kind != yaml.MappingNode {
		c.errf(path, "must be a mapping, got %s", ydescribe(n))
		return m, false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := yderef(n.Content[i])
		if kn.Kind != yaml.ScalarNode {
			c.errf(path, "keys must be scalars, got %s", ydescribe(kn))
			continue
		}
		k := kn.Value
		if _, dup := m.vals[k]; dup {
			c.errf(ykey(path, k), "duplicate key")
			continue
		}
		if known != nil && !slices.Contains(known, k) {
			c.errf(ykey(path, k), "unknown key (known: %s)", strings.Join(known, ", "))
			continue
		}
		m.keys = append(m.keys, k)
		m.vals[k] = n.Content[i+1]
	}
	return m, true
}

// sequence decodes a sequence node.
func (c *yctx) sequence(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	n = yderef(n)
	if n.Kind != yaml.SequenceNode {
		c.errf(path, "must be a list, got %s", ydescribe(n))
		return nil, false
	}
	return n.Content, true
}

func ydescribe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return strconv.Quote(ytrunc(n.Value, 40))
	}
	return "an unsupported node"
}

func ytrunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// str decodes a non-null scalar as a string.
func (c *yctx) str(n *yaml.Node, path string) (string, bool) {
	n = yderef(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		c.errf(path, "must be a string, got %s", ydescribe(n))
		return "", false
	}
	return n.Value, true
}

// number decodes a finite number (YAML int or float; a quoted string is
// refused so that a typo is not silently read as a number).
func (c *yctx) number(n *yaml.Node, path string) (float64, bool) {
	n = yderef(n)
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") {
		c.errf(path, "must be a number, got %s", ydescribe(n))
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil {
		c.errf(path, "must be a number, got %s", ydescribe(n))
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.errf(path, "must be finite, got %s", n.Value)
		return 0, false
	}
	return v, true
}

// seconds decodes a finite, non-negative number of seconds.
func (c *yctx) seconds(n *yaml.Node, path string) (float64, bool) {
	v, ok := c.number(n, path)
	if ok && v < 0 {
		c.errf(path, "must not be negative, got %s", yfloat(v))
		return 0, false
	}
	return v, ok
}

// integer decodes a YAML integer in [lo, hi].
func (c *yctx) integer(n *yaml.Node, path string, lo, hi int64) (int64, bool) {
	n = yderef(n)
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		c.errf(path, "must be an integer, got %s", ydescribe(n))
		return 0, false
	}
	if v < lo {
		c.errf(path, "must be at least %d, got %d", lo, v)
		return 0, false
	}
	if v > hi {
		c.errf(path, "must be at most %d, got %d", hi, v)
		return 0, false
	}
	return v, true
}

func (c *yctx) boolean(n *yaml.Node, path string) (bool, bool) {
	n = yderef(n)
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		c.errf(path, "must be true or false, got %s", ydescribe(n))
		return false, false
	}
	return v, true
}

// quantity decodes a Kubernetes quantity ("2", "500m", "29Gi", 0.5),
// refusing negative and absurdly large values.
func (c *yctx) quantity(n *yaml.Node, path string, limit float64) (resource.Quantity, bool) {
	n = yderef(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" || n.ShortTag() == "!!bool" {
		c.errf(path, "must be a quantity such as 2, 500m or 4Gi, got %s", ydescribe(n))
		return resource.Quantity{}, false
	}
	q, err := yparseQuantity(n.Value, limit)
	if err != nil {
		c.errf(path, "%v", err)
		return resource.Quantity{}, false
	}
	return q, true
}

func yparseQuantity(s string, limit float64) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return q, fmt.Errorf("must be a quantity such as 2, 500m or 4Gi, got %q", ytrunc(s, 40))
	}
	if q.Sign() < 0 {
		return q, fmt.Errorf("must not be negative, got %s", s)
	}
	if q.AsApproximateFloat64() > limit {
		return q, fmt.Errorf("too large: %s (at most %g)", s, limit)
	}
	return q, nil
}

// cpu decodes a CPU quantity into millicores (rounded up, as Kubernetes
// does for requests below a millicore).
func (c *yctx) cpu(n *yaml.Node, path string) (int64, bool) {
	q, ok := c.quantity(n, path, wlMaxCPUCores)
	return q.MilliValue(), ok
}

// memory decodes a memory quantity into bytes (rounded up).
func (c *yctx) memory(n *yaml.Node, path string) (int64, bool) {
	q, ok := c.quantity(n, path, wlMaxMemoryBytes)
	return q.Value(), ok
}

func yfloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
