package kubectlfluence

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
		{"Source", true}, {"Nodes", true}, {"Domain", true}, {"Reason", true}}
	if namespace == "" {
		cols = append([]column{{"Namespace", false}}, cols...)
	}
	var rows [][]any
	for _, g := range list.Items {
		row := []any{shortKey(g.Key, g.Namespace), g.State, g.Size, pods(g), g.Placed, g.Bound, span(time.Duration(g.WaitSeconds * float64(time.Second))), start(list.Time, g),
			g.Source, orNone(strings.Join(g.Nodes, ",")), orNone(strings.Join(g.Domains, ",")), orNone(g.Reason)}
		if namespace == "" {
			row = append([]any{g.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	return o.printTable(cols, rows)
}

// pods is a group's pods that fluence counts, and those that wait for
// their scheduling gates, which it does not: "1 (+2 gated)".
func pods(g inspect.Group) any {
	if g.Gated == 0 {
		return g.Pods
	}
	return fmt.Sprintf("%d (+%d gated)", g.Pods, g.Gated)
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
	// -o wide shows each node's domain at every topology level.
	cols := []column{{"Name", false}, {"Status", false}, {"CPU", false}, {"Memory", false}, {"GPU", false}, {"Pods", false}}
	// DRA devices, allocated of all, where some node publishes them.
	devices := slices.ContainsFunc(list.Items, func(n inspect.Node) bool { return n.Devices > 0 })
	if devices {
		cols = append(cols, column{"Devices", false})
	}
	cols = append(cols, column{"Groups", false})
	for _, l := range levelColumns(list) {
		cols = append(cols, column{l, true})
	}
	cols = append(cols, column{"Foreign", true})
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
		row := []any{n.Name, status,
			cpu(a.CPUMillis) + "/" + cpu(t.CPUMillis), memory(a.MemoryBytes) + "/" + memory(t.MemoryBytes),
			fmt.Sprintf("%d/%d", a.GPU, t.GPU), fmt.Sprintf("%d/%d", a.Pods, t.Pods)}
		if devices {
			row = append(row, fmt.Sprintf("%d/%d", n.DevicesAllocated, n.Devices))
		}
		row = append(row, orNone(strings.Join(groups, ",")))
		for _, d := range nodeDomains(list, n) {
			row = append(row, d)
		}
		rows = append(rows, append(row, fmt.Sprintf("%d pods, cpu %s, memory %s", n.Foreign.Pods, cpu(n.Foreign.CPUMillis), memory(n.Foreign.MemoryBytes))))
	}
	return o.printTable(cols, rows)
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
