package kubectlfluence

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// printRaw writes an answer as JSON or YAML; false for the table formats.
func (o *options) printRaw(v any) (bool, error) {
	switch o.output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintf(o.streams.Out, "%s\n", b)
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = o.streams.Out.Write(b)
		return true, err
	}
	return false, nil
}

// column is a table column; wide ones show with -o wide.
type column struct {
	name string
	wide bool
}

// printTable prints rows as kubectl prints tables.
func (o *options) printTable(cols []column, rows [][]any) error {
	t := &metav1.Table{}
	for _, c := range cols {
		def := metav1.TableColumnDefinition{Name: c.name, Type: "string"}
		if c.wide {
			def.Priority = 1
		}
		t.ColumnDefinitions = append(t.ColumnDefinitions, def)
	}
	for _, r := range rows {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: r})
	}
	return printers.NewTablePrinter(printers.PrintOptions{Wide: o.output == "wide"}).PrintObj(t, o.streams.Out)
}

// nothing tells, as kubectl does, that a list is empty.
func (o *options) nothing(what, namespace string) {
	if namespace == "" {
		fmt.Fprintf(o.streams.ErrOut, "No %s found.\n", what)
		return
	}
	fmt.Fprintf(o.streams.ErrOut, "No %s found in %s namespace.\n", what, namespace)
}

func (o *options) groups(ctx context.Context, c *client, namespace string) error {
	var list inspect.GroupList
	if err := c.get(ctx, inspect.ResourceGroups, namespace, "", &list); err != nil {
		return err
	}
	if done, err := o.printRaw(list); done {
		return err
	}
	if len(list.Items) == 0 {
		o.nothing("groups", namespace)
		return nil
	}
	cols := []column{{"Name", false}, {"State", false}, {"Size", false}, {"Pods", false}, {"Placed", false}, {"Bound", false}, {"Waited", false}, {"Start", false},
		{"Source", true}, {"Nodes", true}, {"Reason", true}}
	if namespace == "" {
		cols = append([]column{{"Namespace", false}}, cols...)
	}
	var rows [][]any
	for _, g := range list.Items {
		row := []any{shortKey(g.Key, g.Namespace), g.State, g.Size, g.Pods, g.Placed, g.Bound, span(time.Duration(g.WaitSeconds * float64(time.Second))), start(list.Time, g),
			g.Source, orNone(strings.Join(g.Nodes, ",")), orNone(g.Reason)}
		if namespace == "" {
			row = append([]any{g.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	return o.printTable(cols, rows)
}

// start is when a group started, or is reserved to start.
func start(now time.Time, g inspect.Group) string {
	switch {
	case g.Started != nil:
		return relative(now, *g.Started)
	case g.ReservedStart != nil:
		return relative(now, *g.ReservedStart)
	case g.HeldUntil != nil:
		return "held " + relative(now, *g.HeldUntil)
	}
	return "<none>"
}

func (o *options) queue(ctx context.Context, c *client, namespace string) error {
	var q inspect.Queue
	if err := c.get(ctx, inspect.ResourceQueue, namespace, "", &q); err != nil {
		return err
	}
	if done, err := o.printRaw(q); done {
		return err
	}
	if len(q.Entries) == 0 {
		o.nothing("waiting groups", namespace)
		return nil
	}
	cols := []column{{"Position", false}, {"Name", false}, {"State", false}, {"Priority", false}, {"Pods", false}, {"Queued", false}, {"Start", false}, {"Reason", true}}
	if namespace == "" {
		cols = append([]column{{"Namespace", false}}, cols...)
	}
	var rows [][]any
	for _, e := range q.Entries {
		st := "<none>"
		switch {
		case e.ReservedStart != nil:
			st = relative(q.Time, *e.ReservedStart)
		case e.HeldUntil != nil:
			st = "held " + relative(q.Time, *e.HeldUntil)
		}
		row := []any{e.Position, shortKey(e.Group, e.Namespace), e.State, e.Priority, e.Pods, relative(q.Time, e.Queued), st, orNone(e.Reason)}
		if namespace == "" {
			row = append([]any{e.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	fmt.Fprintf(o.streams.ErrOut, "Queue policy %s: %d of the first %d waiting groups may hold a reservation.\n", q.Policy, q.Reservations, q.QueueDepth)
	return o.printTable(cols, rows)
}

func (o *options) nodes(ctx context.Context, c *client, _ string) error {
	var list inspect.NodeList
	if err := c.get(ctx, inspect.ResourceNodes, "", "", &list); err != nil {
		return err
	}
	if done, err := o.printRaw(list); done {
		return err
	}
	if len(list.Items) == 0 {
		o.nothing("nodes", "")
		return nil
	}
	cols := []column{{"Name", false}, {"Status", false}, {"CPU", false}, {"Memory", false}, {"GPU", false}, {"Pods", false}, {"Groups", false},
		{"Zone", true}, {"Rack", true}, {"Foreign", true}}
	var rows [][]any
	for _, n := range list.Items {
		status := "Ready"
		switch {
		case n.Down:
			status = "Down"
		case n.Overloaded:
			status = "Overloaded"
		}
		var groups []string
		for _, g := range n.Groups {
			groups = append(groups, fmt.Sprintf("%s(%d)", g.Group, g.Pods))
		}
		a, t := n.Allocated, n.Allocatable
		rows = append(rows, []any{n.Name, status,
			cpu(a.CPUMillis) + "/" + cpu(t.CPUMillis), memory(a.MemoryBytes) + "/" + memory(t.MemoryBytes),
			fmt.Sprintf("%d/%d", a.GPU, t.GPU), fmt.Sprintf("%d/%d", a.Pods, t.Pods), orNone(strings.Join(groups, ",")),
			n.Zone, orNone(n.Rack), fmt.Sprintf("%d pods, cpu %s, memory %s", n.Foreign.Pods, cpu(n.Foreign.CPUMillis), memory(n.Foreign.MemoryBytes))})
	}
	return o.printTable(cols, rows)
}

func (o *options) graph(ctx context.Context, c *client, _ string) error {
	var g inspect.Graph
	if err := c.get(ctx, inspect.ResourceGraph, "", "", &g); err != nil {
		return err
	}
	if done, err := o.printRaw(g); done {
		return err
	}
	w := o.streams.Out
	if !g.Built {
		fmt.Fprintln(w, "No graph yet: fluence has seen no node.")
		return nil
	}
	var types []string
	for _, t := range g.Types {
		types = append(types, fmt.Sprintf("%s %d", t.Type, t.Vertices))
	}
	fmt.Fprintf(w, "%d vertices (%s); built %d times", g.Vertices, strings.Join(types, ", "), g.Rebuilds)
	if g.Stale {
		fmt.Fprint(w, "; nodes changed since, rebuilt before the next decision")
	}
	fmt.Fprintln(w)
	printVertex(w, g.Root, "", "", o.output == "wide")
	return nil
}

// printVertex draws the graph as a tree. A node's pools go on its own line
// unless wide, which draws them as vertices too.
func printVertex(w io.Writer, v *inspect.Vertex, lead, childLead string, wide bool) {
	fmt.Fprintf(w, "%s%s %s", lead, v.Type, v.Name)
	children := v.Children
	if v.Type == "node" && !wide {
		var pools []string
		for _, c := range v.Children {
			pools = append(pools, pool(c))
		}
		if len(pools) > 0 {
			fmt.Fprintf(w, ": %s", strings.Join(pools, ", "))
		}
		children = nil
	} else if len(children) == 0 && v.Type != "cluster" {
		fmt.Fprintf(w, ": %s", strings.TrimPrefix(pool(v), v.Type+" "))
	}
	if v.Down {
		fmt.Fprint(w, " (down)")
	}
	fmt.Fprintln(w)
	for i, c := range children {
		if i == len(children)-1 {
			printVertex(w, c, childLead+"└── ", childLead+"    ", wide)
		} else {
			printVertex(w, c, childLead+"├── ", childLead+"│   ", wide)
		}
	}
}

// pool renders a leaf: its size in its unit, or a count of identical ones.
func pool(v *inspect.Vertex) string {
	switch {
	case v.Count > 1:
		return fmt.Sprintf("%s ×%d", v.Type, v.Count)
	case v.Unit == "m":
		return v.Type + " " + cpu(v.Size)
	case v.Unit == "MiB":
		return v.Type + " " + memory(v.Size<<20)
	}
	return fmt.Sprintf("%s %d%s", v.Type, v.Size, v.Unit)
}

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
	fmt.Fprintf(w, "Size:\t%d (%d pods exist, %d placed, %d bound)\n", g.Size, g.Pods, g.Placed, g.Bound)
	fmt.Fprintf(w, "State:\t%s\n", e.Verdict)
	fmt.Fprintf(w, "Waited:\t%s\n", span(time.Duration(g.WaitSeconds*float64(time.Second))))
	if e.Position > 0 {
		fmt.Fprintf(w, "Queue:\t%d of %d\n", e.Position, e.Queued)
	}
	switch {
	case e.ExpectedStart != nil:
		fmt.Fprintf(w, "Expected start:\t%s (%s)\n", e.ExpectedStart.Format(time.RFC3339), relative(e.Time, *e.ExpectedStart))
	case g.Started != nil:
		fmt.Fprintf(w, "Started:\t%s (%s)\n", g.Started.Format(time.RFC3339), relative(e.Time, *g.Started))
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

// relative says how far t is from now: "in 9m40s" or "12s ago".
func relative(now, t time.Time) string {
	if t.After(now) {
		return "in " + span(t.Sub(now))
	}
	return span(now.Sub(t)) + " ago"
}

// span is a duration as kubectl shows ages.
func span(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return duration.HumanDuration(d)
}

func cpu(milli int64) string { return resource.NewMilliQuantity(milli, resource.DecimalSI).String() }

func memory(b int64) string { return resource.NewQuantity(b, resource.BinarySI).String() }

func amount(res string, v int64) string {
	switch res {
	case "cpu":
		return cpu(v)
	case "memory":
		return memory(v)
	}
	return fmt.Sprint(v)
}

// shortKey is a group's key without its namespace: its name, or
// SOURCE:NAME for a workload's group, as explain takes it.
func shortKey(key, namespace string) string { return strings.TrimPrefix(key, namespace+"/") }

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
