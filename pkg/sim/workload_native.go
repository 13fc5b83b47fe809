package sim

import (
	"strconv"

	"go.yaml.in/yaml/v3"
)

// The native format states the cluster and the groups explicitly; it is
// what users write and what synthetic workloads are saved as. Reference:
// docs/sim-workload.md. Unknown keys are errors here (unlike the
// experiment format), because in a hand-written file an unknown key is a
// typo that would otherwise silently fall back to a default.
//
//	name: my-workload
//	cluster:
//	  nodes:
//	    - {name: a, count: 8, cpu: "3", memory: "29Gi", gpu: 0, labels: {zone: z1}}
//	    - {name: g, count: 2, cpu: 64, gpu: 4, gpu_devices: {gpu.example.com/clique: c1}, labels: {gpu.example.com/clique: c1}}
//	params: {permit_timeout: 10, quota_cpu: "40", quota_pods: 1000}
//	topology_levels: [zone]
//	groups:
//	  - {name: j1, arrival: 0, pods: 4, cpu: "2", memory: 1Gi, runtime: 20, duration: 30, release_delay: 3}
//	  - {name: j2, arrival: 1.5, pods: [{count: 2, cpu: "1"}, {count: 1, cpu: "4", gpu: 1}], runtime: 60}
//	  - {name: j3, pods: 2, cpu: "1", runtime: 10, topology_required: zone}
//	  - {name: j4, pods: 2, cpu: "1", runtime: 3600, checkpoint_every: 600, movable: true}

var (
	nativeTopKeys   = []string{"name", "cluster", "params", "topology_levels", "groups"}
	nativeClusterK  = []string{"nodes"}
	nativeNodeKeys  = []string{"name", "count", "cpu", "memory", "gpu", "labels", "gpu_devices"}
	nativeParamKeys = []string{"permit_timeout", "quota_cpu", "quota_pods"}
	nativeGroupKeys = []string{"name", "arrival", "pods", "cpu", "memory", "gpu", "runtime", "duration", "priority", "release_delay",
		"topology_required", "topology_preferred", "checkpoint_every", "movable"}
	nativePodKeys = []string{"count", "cpu", "memory", "gpu"}
)

func parseNative(c *yctx, root *yaml.Node) *Workload {
	w := &Workload{Params: Params{PermitTimeout: defaultPermitTimeout}}
	top, ok := c.mapping(root, "", nativeTopKeys)
	if !ok {
		return w
	}
	if n := top.get("name"); n != nil {
		w.Name, _ = c.str(n, "name")
	}
	c.nativeCluster(top, w)
	if n := top.get("params"); n != nil {
		c.nativeParams(n, w)
	}
	if n := top.get("topology_levels"); n != nil {
		w.TopologyLevels = c.topologyLevels(n, w.Cluster)
	}
	c.nativeGroups(top, w)
	return w
}

func (c *yctx) nativeCluster(top ymap, w *Workload) {
	n := top.get("cluster")
	if n == nil {
		c.errf("cluster", "required: the nodes to simulate")
		return
	}
	cl, ok := c.mapping(n, "cluster", nativeClusterK)
	if !ok {
		return
	}
	seq, ok := c.sequence(cl.vals["nodes"], "cluster.nodes")
	if !ok {
		return
	}
	if len(seq) == 0 {
		c.errf("cluster.nodes", "must list at least one node")
		return
	}
	names := map[string]string{} // node name -> path that made it
	var entries []gpuEntry
	for i, nn := range seq {
		path := yidx("cluster.nodes", i)
		m, ok := c.mapping(nn, path, nativeNodeKeys)
		if !ok {
			continue
		}
		base := "n" + strconv.Itoa(i)
		if n := m.get("name"); n != nil {
			if s, ok := c.str(n, ykey(path, "name")); ok {
				if s == "" {
					c.errf(ykey(path, "name"), "must not be empty")
				}
				base = s
			}
		}
		count, counted := int64(1), false
		if n := m.get("count"); n != nil {
			v, ok := c.integer(n, ykey(path, "count"), 1, wlMaxNodes)
			if !ok {
				continue
			}
			count, counted = v, true
		}
		if int64(len(w.Cluster.Nodes))+count > wlMaxNodes {
			c.errf(ykey(path, "count"), "more than %d nodes in all", wlMaxNodes)
			return
		}
		spec := NodeSpec{Memory: UnmodelledMemory}
		if n := m.get("cpu"); n == nil {
			c.errf(ykey(path, "cpu"), "required")
		} else if v, ok := c.cpu(n, ykey(path, "cpu")); ok {
			if v <= 0 {
				c.errf(ykey(path, "cpu"), "must be positive")
			}
			spec.CPU = v
		}
		if n := m.get("memory"); n != nil {
			if v, ok := c.memory(n, ykey(path, "memory")); ok {
				if v <= 0 {
					c.errf(ykey(path, "memory"), "must be positive (leave it out if memory is not modelled)")
				}
				spec.Memory = v
			}
		}
		if n := m.get("gpu"); n != nil {
			spec.GPU, _ = c.integer(n, ykey(path, "gpu"), 0, wlMaxGPUs)
		}
		if n := m.get("labels"); n != nil {
			if lm, ok := c.mapping(n, ykey(path, "labels"), nil); ok && len(lm.keys) > 0 {
				spec.Labels = map[string]string{}
				for _, k := range lm.keys {
					if v, ok := c.str(lm.vals[k], ykey(lm.path, k)); ok {
						spec.Labels[k] = v
					}
				}
			}
		}
		if n := m.get("gpu_devices"); n != nil {
			c.gpuDevices(n, ykey(path, "gpu_devices"), &spec)
		}
		entries = append(entries, gpuEntry{path, spec.GPU, spec.GPUDevices})
		for k := range count {
			name := base
			if counted {
				name = base + "-" + strconv.FormatInt(k, 10)
			}
			if prev, dup := names[name]; dup {
				c.errf(ykey(path, "name"), "node name %q is already used by %s", name, prev)
				break
			}
			names[name] = path
			node := spec
			node.Name = name
			if spec.Labels != nil {
				// Each node owns its labels: a scheduler may add to them.
				node.Labels = make(map[string]string, len(spec.Labels))
				for lk, lv := range spec.Labels {
					node.Labels[lk] = lv
				}
			}
			w.Cluster.Nodes = append(w.Cluster.Nodes, node)
		}
	}
	c.gpuDevicesEverywhere(entries)
}

func (c *yctx) nativeParams(n *yaml.Node, w *Workload) {
	m, ok := c.mapping(n, "params", nativeParamKeys)
	if !ok {
		return
	}
	if n := m.get("permit_timeout"); n != nil {
		if v, ok := c.seconds(n, "params.permit_timeout"); ok {
			if v == 0 {
				c.errf("params.permit_timeout", "must be positive")
			}
			w.Params.PermitTimeout = v
		}
	}
	if n := m.get("quota_cpu"); n != nil {
		w.Params.QuotaCPU, _ = c.cpu(n, "params.quota_cpu")
	}
	if n := m.get("quota_pods"); n != nil {
		v, _ := c.integer(n, "params.quota_pods", 0, wlMaxPodsTotal)
		w.Params.QuotaPods = int(v)
	}
}

func (c *yctx) nativeGroups(top ymap, w *Workload) {
	n := top.vals["groups"]
	if n == nil {
		c.errf("groups", "required: the pod groups to replay")
		return
	}
	seq, ok := c.sequence(n, "groups")
	if !ok {
		return
	}
	if len(seq) == 0 {
		c.errf("groups", "must list at least one group")
		return
	}
	if len(seq) > wlMaxGroups {
		c.errf("groups", "more than %d groups", wlMaxGroups)
		return
	}
	names := map[string]int{}
	total := 0
	labels := clusterLabelKeys(w.Cluster)
	for i, gn := range seq {
		path := yidx("groups", i)
		m, ok := c.mapping(gn, path, nativeGroupKeys)
		if !ok {
			continue
		}
		g := GroupSpec{Name: "g" + strconv.Itoa(i)}
		if n := m.get("name"); n != nil {
			if s, ok := c.str(n, ykey(path, "name")); ok {
				if s == "" {
					c.errf(ykey(path, "name"), "must not be empty")
				}
				g.Name = s
			}
		}
		if prev, dup := names[g.Name]; dup {
			c.errf(ykey(path, "name"), "%q is already the name of groups[%d]", g.Name, prev)
		} else {
			names[g.Name] = i
		}
		if n := m.get("arrival"); n != nil {
			g.Arrival, _ = c.seconds(n, ykey(path, "arrival"))
		}
		if n := m.get("runtime"); n == nil {
			c.errf(ykey(path, "runtime"), "required: seconds from gang start to completion")
		} else {
			g.Runtime, _ = c.seconds(n, ykey(path, "runtime"))
		}
		if n := m.get("duration"); n != nil {
			g.Duration, _ = c.seconds(n, ykey(path, "duration"))
		}
		if n := m.get("release_delay"); n != nil {
			g.ReleaseDelay, _ = c.seconds(n, ykey(path, "release_delay"))
		}
		if n := m.get("priority"); n != nil {
			g.Priority = c.groupPriority(n, ykey(path, "priority"), g.Name)
		}
		c.groupTopology(m, path, &g, labels)
		c.groupCheckpoint(m, path, &g)
		g.Pods = c.nativePods(m, path, wlMaxPodsTotal-total)
		total += len(g.Pods)
		w.Groups = append(w.Groups, g)
	}
}

// podDefaults is what a group says about its pods outside the pods list;
// the entries of a heterogeneous pods list inherit it.
type podDefaults struct {
	pod    PodSpec
	hasCPU bool // cpu was given
	bad    bool // a field failed to parse (and was reported)
}

// parse overrides d with the cpu, memory and gpu that m gives.
func (d *podDefaults) parse(c *yctx, m ymap, path string) {
	var ok bool
	if n := m.get("cpu"); n != nil {
		d.hasCPU = true
		if d.pod.CPU, ok = c.cpu(n, ykey(path, "cpu")); !ok {
			d.bad = true
		}
	}
	if n := m.get("memory"); n != nil {
		if d.pod.Memory, ok = c.memory(n, ykey(path, "memory")); !ok {
			d.bad = true
		}
	}
	if n := m.get("gpu"); n != nil {
		if d.pod.GPU, ok = c.integer(n, ykey(path, "gpu"), 0, wlMaxGPUs); !ok {
			d.bad = true
		}
	}
}

// nativePods expands pods: a count of identical pods using the group's
// cpu, memory and gpu, or a list of {count, cpu, memory, gpu} entries,
// each defaulting to the group's values.
func (c *yctx) nativePods(m ymap, path string, budget int) []PodSpec {
	var d podDefaults
	d.parse(c, m, path)
	ppath := ykey(path, "pods")
	n := m.get("pods")
	if n == nil {
		c.errf(ppath, "required: a pod count, or a list of {count, cpu, memory, gpu}")
		return nil
	}
	limit := int64(min(wlMaxPodsPerGroup, budget))
	if n.Kind == yaml.ScalarNode {
		count, ok := c.integer(n, ppath, 1, 1<<62)
		if !ok {
			return nil
		}
		if count > limit {
			c.errf(ppath, "too many pods: %d (at most %d in a group, %d in all)", count, wlMaxPodsPerGroup, wlMaxPodsTotal)
			return nil
		}
		if !c.checkPod(d, path, ykey(path, "cpu")) {
			return nil
		}
		pods := make([]PodSpec, count)
		for i := range pods {
			pods[i] = d.pod
		}
		return pods
	}
	seq, ok := c.sequence(n, ppath)
	if !ok {
		return nil
	}
	if len(seq) == 0 {
		c.errf(ppath, "must list at least one pod entry")
		return nil
	}
	var pods []PodSpec
	for i, en := range seq {
		epath := yidx(ppath, i)
		em, ok := c.mapping(en, epath, nativePodKeys)
		if !ok {
			continue
		}
		e := d
		count := int64(1)
		if n := em.get("count"); n != nil {
			if count, ok = c.integer(n, ykey(epath, "count"), 1, 1<<62); !ok {
				continue
			}
		}
		e.parse(c, em, epath)
		if int64(len(pods))+count > limit {
			c.errf(ykey(epath, "count"), "too many pods (at most %d in a group, %d in all)", wlMaxPodsPerGroup, wlMaxPodsTotal)
			return nil
		}
		if !c.checkPod(e, epath, ykey(epath, "cpu")) {
			continue
		}
		for range count {
			pods = append(pods, e.pod)
		}
	}
	return pods
}

// checkPod: a pod must state its CPU and request something. A pod that
// requests nothing has no place in a gang plan (fluence cannot match an
// empty slot), and a forgotten cpu is the likelier cause.
func (c *yctx) checkPod(d podDefaults, path, cpuPath string) bool {
	if d.bad {
		return false
	}
	p := d.pod
	if !d.hasCPU {
		c.errf(cpuPath, "required (on the group or on each pods entry)")
		return false
	}
	if p.CPU == 0 && p.Memory == 0 && p.GPU == 0 {
		c.errf(path, "a pod must request some cpu, memory or gpu")
		return false
	}
	return true
}
