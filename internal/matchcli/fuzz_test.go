package matchcli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// FuzzExec feeds arbitrary command lines (and arbitrary jobspec bytes) to a
// session: nothing may panic, and every command gets a status.
func FuzzExec(f *testing.F) {
	f.Add("match allocate F", "version: 9999\nresources: [{type: slot, count: 2, label: t, with: [{type: core, count: 1}]}]\ntasks: [{command: [a], slot: t, count: {per_slot: 1}}]\nattributes: {system: {duration: 10}}\n")
	f.Add("match allocate_orelse_reserve F", `{"version":9999,"resources":[{"type":"node","count":1,"exclusive":true,"with":[{"type":"slot","count":1,"label":"t","with":[{"type":"core","count":1}]}]}],"tasks":[{"command":["a"],"slot":"t","count":{"per_slot":1}}],"attributes":{"system":{"duration":0}}}`)
	f.Add("partial-cancel 1 node0 /cluster0", "")
	f.Add("set-status /cluster0/node1 down", "")
	f.Add("info -9223372036854775808", "")
	f.Fuzz(func(t *testing.T, line, spec string) {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				panic(fmt.Sprintf("hang on line %q spec %q", line, spec))
			}
		}()
		m, err := match.New(resource.MustGenerate("cluster[1]->node[2]->socket[2]->{core[2],gpu[1],memory[1]:4}"), match.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := NewSession(m)
		s.ReadFile = func(string) ([]byte, error) { return []byte(spec), nil }
		for _, l := range []string{"match allocate F", line, "match allocate_orelse_reserve F", line, "cancel 1", "stat"} {
			resp, quit := s.Exec(l)
			if quit || resp == nil {
				continue
			}
			if resp.Status == "" || strings.HasPrefix(resp.Reason, "internal error") {
				t.Fatalf("%q: %+v", l, resp)
			}
		}
	})
}
