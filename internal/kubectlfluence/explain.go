package kubectlfluence

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

func (o *options) explain(ctx context.Context, c *client, namespace, name string) error {
	var e inspect.Explanation
	if err := c.get(ctx, inspect.ResourceGroups, namespace, name, &e); err != nil {
		return err
	}
	if done, err := o.printRaw(e); done {
		return err
	}
	w := printers.GetNewTabWriter(o.streams.Out)
	defer w.Flush()
	g := e.Group
	fmt.Fprintf(w, "Group:\t%s\n", g.Key)
	fmt.Fprintf(w, "Source:\t%s\n", g.Source)
	if g.Gated > 0 {
		// Pods counts only the pods fluence counts: not those that wait
		// for their gates.
		fmt.Fprintf(w, "Size:\t%d (%d pods exist, %d of them wait for their scheduling gates; %d placed, %d bound)\n", g.Size, g.Pods+g.Gated, g.Gated, g.Placed, g.Bound)
	} else {
		fmt.Fprintf(w, "Size:\t%d (%d pods exist, %d placed, %d bound)\n", g.Size, g.Pods, g.Placed, g.Bound)
	}
	fmt.Fprintf(w, "State:\t%s\n", e.Verdict)
	if len(g.Gates) > 0 {
		fmt.Fprintf(w, "Gates:\t%s\n", strings.Join(g.Gates, ", "))
	}
	fmt.Fprintf(w, "Waited:\t%s\n", span(time.Duration(g.WaitSeconds*float64(time.Second))))
	if e.Position > 0 {
		fmt.Fprintf(w, "Queue:\t%d of %d\n", e.Position, e.Queued)
	}
	switch {
	case e.ExpectedStart != nil:
		fmt.Fprintf(w, "Expected start:\t%s (%s)\n", e.ExpectedStart.Format(time.RFC3339), relative(e.Time, *e.ExpectedStart))
	case g.Started != nil:
		fmt.Fprintf(w, "Started:\t%s (%s)\n", g.Started.Format(time.RFC3339), relative(e.Time, *g.Started))
	case e.Verdict == inspect.StateGated:
		fmt.Fprintf(w, "Expected start:\tnot planned: its pods wait for their scheduling gates\n")
	case e.Verdict != "rejected" && e.Verdict != "invalid":
		fmt.Fprintf(w, "Expected start:\tnot planned yet\n")
	}
	if len(g.Nodes) > 0 {
		fmt.Fprintf(w, "Nodes:\t%s\n", strings.Join(g.Nodes, ", "))
	}
	fmt.Fprintf(w, "Why:\t%s\n", e.Summary)
	for _, d := range e.Details {
		fmt.Fprintf(w, "\t%s\n", d)
	}
	if len(e.Short) > 0 {
		fmt.Fprintf(w, "Short:\tRESOURCE\tASKED\tAVAILABLE\tLARGEST POD\tLARGEST NODE\n")
		for _, s := range e.Short {
			fmt.Fprintf(w, "\t%s\t%s\t%s\t%s\t%s\n", s.Resource, amount(s.Resource, s.Need), amount(s.Resource, s.Have), amount(s.Resource, s.PerPod), amount(s.Resource, s.PerNode))
		}
	}
	return nil
}
