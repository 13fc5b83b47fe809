package plugin

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
)

func TestArgsDefaults(t *testing.T) {
	cfg, err := Args{}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MatchPolicy != "lonode" || cfg.Queue.Policy != queue.Easy || cfg.Queue.QueueDepth != 32 ||
		cfg.Queue.ReservationDepth != 64 || !cfg.Queue.Packing || cfg.DefaultDuration != 3600 || cfg.PermitTimeout != time.Minute {
		t.Fatalf("defaults: %+v", cfg)
	}
	if p := cfg.Preemption; p == nil || *p != (gang.Preemption{After: 60, MinRuntime: 0, Timeout: 120, MoveEvery: 3600}) {
		t.Fatalf("preemption defaults: %+v, want on, after 60 s, minRuntime 0, timeout 120 s, moveEvery 3600 s", p)
	}
}

func TestArgsValidation(t *testing.T) {
	for _, tc := range []struct {
		args Args
		want []string // every field named in the error
	}{
		{Args{MatchPolicy: "fastest"}, []string{"matchPolicy", "fastest"}},
		{Args{QueuePolicy: "lifo"}, []string{"queuePolicy", "lifo"}},
		{Args{QueueDepth: -1, ReservationDepth: -2}, []string{"queueDepth", "reservationDepth"}},
		{Args{DefaultDuration: "soon", PermitTimeout: "-5s"}, []string{"defaultDuration", "soon", "permitTimeout", "not positive"}},
		// 400000h is 1.44e9 s: within a seconds limit of 2^40, past the
		// core's horizon once counted in milliseconds.
		{Args{DefaultDuration: "400000h"}, []string{"defaultDuration", "400000h", "longer than 1099511627 s"}},
		{Args{ExtraGPUResources: []string{"amd.com/gpu", " "}}, []string{"extraGPUResources[1]"}},
		{Args{RackLabel: "rack", TopologyLevels: []string{"block"}}, []string{"rackLabel and topologyLevels", "[topology.kubernetes.io/zone, rack]"}},
		{Args{TopologyLevels: []string{"example.com/block", ""}}, []string{"topologyLevels[1]: an empty label key"}},
		{Args{TopologyLevels: []string{"rack", "block", "rack"}}, []string{`topologyLevels[2]: "rack" is listed twice (also topologyLevels[0])`}},
		{Args{TopologyLevels: []string{"example.com/rack", "bad key/x/y"}}, []string{`topologyLevels[1]: "bad key/x/y" is not a label key`}},
		{Args{RackLabel: "rack id"}, []string{`rackLabel: "rack id" is not a label key`}},
		{Args{Preemption: &PreemptionArgs{After: "soon", MinRuntime: "-1s", Timeout: "0s"}},
			[]string{`preemption.after: "soon" is not a duration`, `preemption.minRuntime: "-1s" is negative`, `preemption.timeout: "0s" is not positive`}},
		// A block turned off is still checked.
		{Args{Preemption: &PreemptionArgs{Enabled: new(bool), Timeout: "400000h"}}, []string{"preemption.timeout", "longer than"}},
	} {
		_, err := tc.args.Validate()
		if err == nil {
			t.Errorf("%+v: no error", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not mention %q", tc.args, err, w)
			}
		}
	}
}

func TestDecodeArgsFromConfiguration(t *testing.T) {
	raw := &runtime.Unknown{Raw: []byte(`{"matchPolicy":"hinode","queuePolicy":"conservative","packing":false,"defaultDuration":"90s","rackLabel":"rack"}`), ContentType: runtime.ContentTypeJSON}
	a, err := DecodeArgs(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MatchPolicy != "hinode" || cfg.Queue.Policy != queue.Conservative || cfg.Queue.Packing || cfg.DefaultDuration != 90 || cfg.RackLabel != "rack" {
		t.Fatalf("decoded: %+v", cfg)
	}
	if _, err := DecodeArgs(&runtime.Unknown{Raw: []byte(`{"queueDepth":"deep"}`)}); err == nil {
		t.Fatal("a string queueDepth decoded")
	}
}

func TestTopologyLevelsArgs(t *testing.T) {
	for _, tc := range []struct {
		json      string
		rackLabel string
		levels    []string
	}{
		{`{"topologyLevels":["topology.kubernetes.io/zone","example.com/block","example.com/rack"]}`, "", []string{"topology.kubernetes.io/zone", "example.com/block", "example.com/rack"}},
		{`{"rackLabel":"example.com/rack"}`, "example.com/rack", nil},
		{`{}`, "", nil},
	} {
		a, err := DecodeArgs(&runtime.Unknown{Raw: []byte(tc.json), ContentType: runtime.ContentTypeJSON})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := a.Validate()
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if cfg.RackLabel != tc.rackLabel || !slices.Equal(cfg.TopologyLevels, tc.levels) {
			t.Errorf("%s: rackLabel %q, levels %q; want %q, %q", tc.json, cfg.RackLabel, cfg.TopologyLevels, tc.rackLabel, tc.levels)
		}
		// The configuration is the core's: it accepts what Validate did.
		if _, err := gang.New(gang.Config{RackLabel: cfg.RackLabel, TopologyLevels: cfg.TopologyLevels}); err != nil {
			t.Errorf("%s: the core refuses the validated levels: %v", tc.json, err)
		}
	}
	a := &Args{TopologyLevels: []string{"rack"}}
	c := a.DeepCopyObject().(*Args)
	c.TopologyLevels[0] = "block"
	if a.TopologyLevels[0] != "rack" {
		t.Error("DeepCopyObject shares topologyLevels with the original")
	}
}

// The preemption block: absent, the defaults; enabled: false, none; the
// durations in whole seconds, rounded up; 0s allowed for after and
// minRuntime. The core takes what Validate gives it.
func TestPreemptionArgs(t *testing.T) {
	for _, tc := range []struct {
		json string
		want *gang.Preemption
	}{
		{`{}`, &gang.Preemption{After: 60, Timeout: 120, MoveEvery: 3600}},
		{`{"preemption":{}}`, &gang.Preemption{After: 60, Timeout: 120, MoveEvery: 3600}},
		{`{"preemption":{"enabled":true,"after":"0s","minRuntime":"5m","timeout":"1500ms","moveEvery":"10m"}}`, &gang.Preemption{After: 0, MinRuntime: 300, Timeout: 2, MoveEvery: 600}},
		{`{"preemption":{"after":"1s"}}`, &gang.Preemption{After: 1, Timeout: 120, MoveEvery: 3600}},
		{`{"preemption":{"enabled":false,"after":"1s"}}`, nil},
	} {
		a, err := DecodeArgs(&runtime.Unknown{Raw: []byte(tc.json), ContentType: runtime.ContentTypeJSON})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := a.Validate()
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		switch {
		case tc.want == nil && cfg.Preemption != nil:
			t.Errorf("%s: preemption %+v, want off", tc.json, cfg.Preemption)
		case tc.want != nil && (cfg.Preemption == nil || *cfg.Preemption != *tc.want):
			t.Errorf("%s: preemption %+v, want %+v", tc.json, cfg.Preemption, tc.want)
		}
		if _, err := gang.New(gang.Config{Preemption: cfg.Preemption}); err != nil {
			t.Errorf("%s: the core refuses it: %v", tc.json, err)
		}
	}
	on := true
	a := &Args{Preemption: &PreemptionArgs{Enabled: &on, After: "1s"}}
	c := a.DeepCopyObject().(*Args)
	*c.Preemption.Enabled = false
	c.Preemption.After = "2s"
	if !*a.Preemption.Enabled || a.Preemption.After != "1s" {
		t.Error("DeepCopyObject shares the preemption block with the original")
	}
}
