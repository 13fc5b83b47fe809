package k8sadapter

import "testing"

func TestCountedRefusal(t *testing.T) {
	o := GraphOptions{ExtraGPUResources: []string{"amd.com/gpu"}}
	for _, tc := range []struct {
		plugin  string
		reasons []string
		want    bool
	}{
		{"NodeResourcesFit", []string{"Insufficient cpu"}, true},
		{"NodeResourcesFit", []string{"Insufficient cpu", "Insufficient memory"}, true},
		{"NodeResourcesFit", []string{"Too many pods"}, true},
		{"NodeResourcesFit", []string{"Insufficient nvidia.com/gpu"}, true},
		{"NodeResourcesFit", []string{"Insufficient amd.com/gpu"}, true},
		// What the engine does not count.
		{"NodeResourcesFit", []string{"Insufficient ephemeral-storage"}, false},
		{"NodeResourcesFit", []string{"Insufficient cpu", "Insufficient example.com/fpga"}, false},
		{"NodeResourcesFit", nil, false},
		{"NodePorts", []string{"node(s) didn't have free ports for the requested pod ports"}, false},
		{"InterPodAffinity", []string{"node(s) didn't match pod anti-affinity rules"}, false},
		{"", []string{"Insufficient cpu"}, false},
	} {
		if got := o.CountedRefusal(tc.plugin, tc.reasons); got != tc.want {
			t.Errorf("CountedRefusal(%q, %q) = %v, want %v", tc.plugin, tc.reasons, got, tc.want)
		}
	}
}
