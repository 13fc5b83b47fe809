package k8sadapter

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTopologyOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		want    Topology
		wantErr string
	}{
		{name: "none"},
		{name: "fluence required", ann: map[string]string{TopologyRequiredKey: "example.com/rack"}, want: Topology{Required: "example.com/rack"}},
		{name: "fluence preferred", ann: map[string]string{TopologyPreferredKey: " example.com/block "}, want: Topology{Preferred: "example.com/block"}},
		{name: "kueue", ann: map[string]string{KueueTopologyPreferredKey: "cloud.com/rack"}, want: Topology{Preferred: "cloud.com/rack"}},
		{name: "fluence before kueue", ann: map[string]string{TopologyRequiredKey: "a/rack", KueueTopologyRequiredKey: "b/rack"}, want: Topology{Required: "a/rack"}},
		{name: "required wins", ann: map[string]string{TopologyRequiredKey: "a/rack", TopologyPreferredKey: "a/block"}, want: Topology{Required: "a/rack"}},
		{name: "not a label key", ann: map[string]string{TopologyRequiredKey: "rack one"}, wantErr: "annotation " + TopologyRequiredKey + `: "rack one" is not a node label key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TopologyOf(&metav1.ObjectMeta{Annotations: tc.ann})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("TopologyOf = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
