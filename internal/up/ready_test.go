package up

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The ready lines are read by scripts and by TestUp: keep them stable.
func TestPrintReadyGolden(t *testing.T) {
	o := Options{Nodes: 3, CPU: "2", Memory: "4Gi", GPUNodes: 1, GPUs: 2, Racks: 2,
		NodeLabels: map[string]string{"pool": "a"}, FeatureGates: map[string]bool{"WorkloadWithJob": true, "GenericWorkload": true}}
	for _, tc := range []struct {
		golden   string
		external bool
	}{{"ready.golden", false}, {"ready-external-kubeconfig-no-gates.golden", true}} {
		t.Run(tc.golden, func(t *testing.T) {
			kubeconfig, opts := "/tmp/fluence-up-1/kubeconfig", o
			if tc.external { // and the gates off
				kubeconfig, opts.FeatureGates = "/home/me/fluence.kubeconfig", nil
			}
			var b bytes.Buffer
			printReady(&b, ReadyInfo{APIServer: "https://127.0.0.1:40001", Kubeconfig: kubeconfig, WorkDir: "/tmp/fluence-up-1", Options: opts, ExternalFile: tc.external,
				Scheduler: "https://127.0.0.1:40002", SchedulerCA: "/tmp/fluence-up-1/scheduler-pki/kube-scheduler.crt"})
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("ready lines differ from %s (-want +got; -update rewrites):\n%s", path, diff)
			}
		})
	}
}
