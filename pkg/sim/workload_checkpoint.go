package sim

// Checkpoints and movable groups in the native format
// (docs/sim-workload.md):
//
//	groups:
//	  - {name: a, pods: 4, cpu: 2, runtime: 3600, checkpoint_every: 600, movable: true}
//
// checkpoint_every is the seconds of run between two checkpoints of the
// group (GroupSpec.CheckpointEvery); movable says its pods may be moved
// (GroupSpec.Movable). Errors name the group as well as the field.

// groupCheckpoint reads a group's checkpoint_every and movable into g.
func (c *yctx) groupCheckpoint(m ymap, path string, g *GroupSpec) {
	if n := m.get("checkpoint_every"); n != nil {
		p := ykey(path, "checkpoint_every")
		v, ok := c.number(n, p)
		switch {
		case !ok:
		case v <= 0:
			c.errf(p, "group %q: must be a positive number of seconds of run between checkpoints, got %s (leave it out for none)", g.Name, yfloat(v))
		default:
			g.CheckpointEvery = v
		}
	}
	if n := m.get("movable"); n != nil {
		g.Movable, _ = c.boolean(n, ykey(path, "movable"))
	}
}
