package plugin_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/plugin"
)

// A pod's Binding goes out while the core is busy: Bind takes what the
// Binding carries from its Reserve, and the core learns that the pod is
// bound at its next turn, in the order the bindings landed.
func TestBindDoesNotWaitForTheCore(t *testing.T) {
	pods := groupPods("g", 2, "2", "1")
	h := newHarness(t, nodes(2, "4"), pods)
	cycles := map[string]*cycle{}
	on := map[string]string{}
	for _, p := range pods {
		cycles[p.Name], on[p.Name] = h.place(p)
	}
	for _, p := range pods {
		if s := cycles[p.Name].reserve(on[p.Name]); !s.IsSuccess() {
			t.Fatalf("Reserve(%s) = %v", p.Name, s)
		}
		if _, s := cycles[p.Name].permit(on[p.Name]); !s.IsSuccess() && !s.IsWait() {
			t.Fatalf("Permit(%s) = %v", p.Name, s)
		}
	}
	for _, p := range pods {
		if s := cycles[p.Name].waitOnPermit(); !s.IsSuccess() {
			t.Fatalf("WaitOnPermit(%s) = %v", p.Name, s)
		}
	}

	release := h.insp.HoldCore(schedulerName)
	done := make(chan error, 1)
	go func() {
		for _, p := range pods {
			if s := cycles[p.Name].bind(on[p.Name]); !s.IsSuccess() {
				done <- s.AsError()
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			release()
			t.Fatalf("Bind: %v", err)
		}
	case <-time.After(30 * time.Second):
		release()
		t.Fatal("Bind waited for the core's lock")
	}
	bs := h.bindings()
	if len(bs) != 2 {
		release()
		t.Fatalf("%d bindings sent, want 2", len(bs))
	}
	rec := bs[0].Annotations[plugin.AllocationKey]
	if !strings.HasPrefix(rec, "ns/g@") || bs[1].Annotations[plugin.AllocationKey] != rec {
		t.Errorf("bindings carry allocations %q and %q, want the group's", rec, bs[1].Annotations[plugin.AllocationKey])
	}
	boundSteps := func() []string {
		var out []string
		for _, e := range h.traced() {
			if e.Kind == "bound" {
				out = append(out, e.Pod)
			}
		}
		return out
	}
	if got := boundSteps(); len(got) != 0 {
		t.Errorf("the core was told of bindings %v while its lock was held", got)
	}
	release()

	// Whoever takes the lock next (the loop, woken by Bind, or an
	// informer's handler) first tells the core of the bindings, in order.
	want := []string{"ns/g-0", "ns/g-1"}
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Equal(boundSteps(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("bound steps %v, want %v", boundSteps(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
