package plugin

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

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
