package sim

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MarshalWorkload writes w in the native format, one line per node and per
// group, so a synthetic workload can be saved, read, edited and replayed:
// ParseWorkload reads it back to the same cluster, groups and params.
// Measured outcomes are not written: the native format has none.
//
// It writes the text directly rather than through a YAML encoder: the
// encoder's node tree costs about 100x more, which matters for the
// 10,000-group workloads this is for; every string goes through yamlStr,
// which quotes anything not plainly safe.
func MarshalWorkload(w *Workload) ([]byte, error) {
	if w == nil {
		return nil, fmt.Errorf("workload: nil")
	}
	var b strings.Builder
	b.WriteString("# fluence simulator workload, native format (docs/sim-workload.md)\n")
	if w.Name != "" {
		b.WriteString("name: " + yamlStr(w.Name) + "\n")
	}
	b.WriteString("cluster:\n  nodes:\n")
	for _, n := range w.Cluster.Nodes {
		b.WriteString("    - {name: " + yamlStr(n.Name) + ", cpu: " + cpuQuantity(n.CPU))
		if n.Memory != UnmodelledMemory {
			b.WriteString(", memory: " + memQuantity(n.Memory))
		}
		if n.GPU != 0 {
			b.WriteString(", gpu: " + strconv.FormatInt(n.GPU, 10))
		}
		if n.GPUDevices && n.GPU > 0 {
			b.WriteString(", gpu_devices: " + yamlMap(n.DeviceAttributes))
		}
		if len(n.Labels) > 0 {
			b.WriteString(", labels: " + yamlMap(n.Labels))
		}
		b.WriteString("}\n")
	}
	var params []string
	if w.Params.PermitTimeout > 0 {
		params = append(params, "permit_timeout: "+secs(w.Params.PermitTimeout))
	}
	if w.Params.QuotaCPU != 0 {
		params = append(params, "quota_cpu: "+cpuQuantity(w.Params.QuotaCPU))
	}
	if w.Params.QuotaPods != 0 {
		params = append(params, "quota_pods: "+strconv.Itoa(w.Params.QuotaPods))
	}
	if len(params) > 0 {
		b.WriteString("params: {" + strings.Join(params, ", ") + "}\n")
	}
	if len(w.TopologyLevels) > 0 {
		levels := make([]string, len(w.TopologyLevels))
		for i, k := range w.TopologyLevels {
			levels[i] = yamlStr(k)
		}
		b.WriteString("topology_levels: [" + strings.Join(levels, ", ") + "]\n")
	}
	b.WriteString("groups:\n")
	for i := range w.Groups {
		g := &w.Groups[i]
		b.WriteString("  - {name: " + yamlStr(g.Name) + ", arrival: " + secs(g.Arrival) + ", pods: ")
		// Runs of identical pods: one run is the plain form (pods: N with
		// the group's cpu, memory, gpu), several the heterogeneous list.
		type run struct {
			pod PodSpec
			n   int
		}
		var runs []run
		for _, p := range g.Pods {
			if len(runs) > 0 && runs[len(runs)-1].pod == p {
				runs[len(runs)-1].n++
			} else {
				runs = append(runs, run{p, 1})
			}
		}
		if len(runs) == 1 {
			b.WriteString(strconv.Itoa(runs[0].n) + podFields(runs[0].pod))
		} else {
			b.WriteString("[")
			for k, r := range runs {
				if k > 0 {
					b.WriteString(", ")
				}
				b.WriteString("{count: " + strconv.Itoa(r.n) + podFields(r.pod) + "}")
			}
			b.WriteString("]")
		}
		b.WriteString(", runtime: " + secs(g.Runtime))
		if g.Duration != 0 {
			b.WriteString(", duration: " + secs(g.Duration))
		}
		if g.ReleaseDelay != 0 {
			b.WriteString(", release_delay: " + secs(g.ReleaseDelay))
		}
		if g.Priority != 0 {
			b.WriteString(", priority: " + strconv.FormatInt(g.Priority, 10))
		}
		if g.TopologyRequired != "" {
			b.WriteString(", topology_required: " + yamlStr(g.TopologyRequired))
		}
		if g.TopologyPreferred != "" {
			b.WriteString(", topology_preferred: " + yamlStr(g.TopologyPreferred))
		}
		if g.CheckpointEvery != 0 {
			b.WriteString(", checkpoint_every: " + secs(g.CheckpointEvery))
		}
		if g.Movable {
			b.WriteString(", movable: true")
		}
		b.WriteString("}\n")
	}
	return []byte(b.String()), nil
}

// yamlMap writes a string map as a flow mapping, keys sorted; {} when
// empty.
func yamlMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(yamlStr(k) + ": " + yamlStr(m[k]))
	}
	b.WriteString("}")
	return b.String()
}

func podFields(p PodSpec) string {
	s := ", cpu: " + cpuQuantity(p.CPU)
	if p.Memory != 0 {
		s += ", memory: " + memQuantity(p.Memory)
	}
	if p.GPU != 0 {
		s += ", gpu: " + strconv.FormatInt(p.GPU, 10)
	}
	return s
}

// cpuQuantity and memQuantity give canonical Kubernetes quantities ("2",
// "500m", "4Gi", "29020325760"): digits and a suffix, always a safe plain
// YAML scalar.
func cpuQuantity(milli int64) string {
	return resource.NewMilliQuantity(milli, resource.DecimalSI).String()
}

func memQuantity(bytes int64) string {
	return resource.NewQuantity(bytes, resource.BinarySI).String()
}

// secs writes seconds without an exponent, which reads back exactly (the
// shortest form that round-trips) and which people read easily.
func secs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

var plainYAML = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./-]*$`)

// yamlStr writes s as a YAML string: plain when that cannot be read as
// anything else, double-quoted otherwise. Go's ASCII quoting uses only
// escapes YAML's double-quoted style shares (\n, \t, \x7f, \u00e9, ...).
func yamlStr(s string) string {
	if plainYAML.MatchString(s) {
		switch strings.ToLower(s) {
		case "null", "true", "false", "yes", "no", "on", "off", "y", "n":
		default:
			return s
		}
	}
	// Invalid UTF-8 would come out as \xNN, which YAML reads as a code
	// point, not a byte; strings read from YAML are always valid anyway.
	return strconv.QuoteToASCII(strings.ToValidUTF8(s, "\uFFFD"))
}
