package gang

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// deviceNote says, for each device request the shapes ask, how many
// nodes have that many devices it admits, and how many of those have
// them free now: the words a group held back by its claims is explained
// in ("each of its 8 pods asks 4 devices of class gpu.example.com with
// ... (claim/gpus): 6 nodes have that many, 2 of them free now"). ""
// when the shapes ask no device.
//
// With a topology key, it also names the domain of that key with the most
// such nodes ("within one fluence.flux-framework.org/rack: the best,
// rack-1, has 2").
func (c *Core) deviceNote(shapes []Shape, key string) string {
	if c.m == nil {
		return ""
	}
	type ask struct {
		n    deviceNeed
		pods int
	}
	var asks []*ask
	for _, s := range shapes {
		if s.Devices == nil {
			continue
		}
		for _, n := range s.Devices.needs {
			if n.prop == "" {
				continue // exactly the devices a pod holds
			}
			i := slices.IndexFunc(asks, func(a *ask) bool { return a.n.prop == n.prop && a.n.count == n.count })
			if i < 0 {
				asks = append(asks, &ask{n: n})
				i = len(asks) - 1
			}
			asks[i].pods++
		}
	}
	if len(asks) == 0 {
		return ""
	}
	g := c.m.Graph()
	t, _ := g.LookupType(TypeDevice)
	var parts []string
	for _, a := range asks {
		c.markAsk(&deviceAsk{needs: []deviceNeed{a.n}})
		have, free := 0, 0
		perDomain := map[string]int{}
		for _, name := range slices.Sorted(maps.Keys(c.vertexOf)) {
			var all, open int64
			for _, v := range g.Children(c.vertexOf[name]) {
				vx := g.Vertex(v)
				if vx.Type != t {
					continue
				}
				if _, ok := vx.Properties[a.n.prop]; !ok {
					continue
				}
				all++
				if c.m.FreeAt(v, c.now) > 0 {
					open++
				}
			}
			if all >= a.n.count {
				have++
				if v := c.nodes[name].Labels[key]; key != "" && v != "" {
					perDomain[v]++
				}
				if open >= a.n.count && !c.nodes[name].Down && !c.overloaded[name] {
					free++
				}
			}
		}
		who := "its pod asks"
		if a.pods > 1 {
			who = fmt.Sprintf("each of %d pods asks", a.pods)
		}
		nodes := fmt.Sprintf("%d nodes have", have)
		if have == 1 {
			nodes = "1 node has"
		}
		part := fmt.Sprintf("%s %d %s (%s): %s that many, %d of them free now", who, a.n.count, a.n.filter.Describe(), a.n.what, nodes, free)
		if key != "" {
			best, most := "", 0
			for _, v := range slices.Sorted(maps.Keys(perDomain)) {
				if perDomain[v] > most {
					best, most = v, perDomain[v]
				}
			}
			if most == 0 {
				part += fmt.Sprintf("; within one %s: no domain has such a node", key)
			} else {
				part += fmt.Sprintf("; within one %s: the best, %s, has %d such nodes", key, best, most)
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// slotShapes are the shapes of an allocation's slots.
func slotShapes(a *alloc) []Shape {
	out := make([]Shape, len(a.slots))
	for i, s := range a.slots {
		out[i] = s.shape
	}
	return out
}
