package plugin

// HoldCore takes the core's lock of the profile's plugin, as a long
// decision holds it, until the returned func is called.
func (r *Inspectors) HoldCore(profile string) (release func()) {
	r.mu.Lock()
	p := r.byProfile[profile]
	r.mu.Unlock()
	p.mu.Lock()
	return p.mu.Unlock
}
