package plugin

// HoldCoreLock takes the core's lock of every plugin in r, as a long
// scheduling step would, and returns what releases it.
func HoldCoreLock(r *Inspectors) (release func()) {
	r.mu.Lock()
	var ps []*Plugin
	for _, p := range r.byProfile {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	for _, p := range ps {
		p.mu.Lock()
	}
	return func() {
		for _, p := range ps {
			p.mu.Unlock()
		}
	}
}
