package report

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/fluence-sched/fluence/pkg/sim"
)

const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 4.5 * vg.Inch
	// pngDPI: 8x4.5 in at 150 dpi is 1200x675 px, sharp on a screen and
	// in a slide without being large.
	pngDPI = 150
	// maxSizeCategories: beyond this many distinct job sizes the bar
	// chart groups sizes into power-of-two ranges so the bars stay
	// readable.
	maxSizeCategories = 12
)

// sans is Liberation Sans, which gonum/plot embeds (go-fonts): rendering
// needs no system font and no network. Sans reads better than the
// default serif at small sizes.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Colors by scheduler name, so a scheduler keeps its color across plots
// and runs; other names take the rest in order. Okabe-Ito colors, told
// apart with the common kinds of color blindness.
var (
	schedulerColors = map[string]color.Color{
		"fluence":      color.RGBA{0, 114, 178, 255},   // blue
		"stock":        color.RGBA{213, 94, 0, 255},    // vermillion
		"coscheduling": color.RGBA{0, 158, 115, 255},   // bluish green
		"quota":        color.RGBA{204, 121, 167, 255}, // reddish purple
	}
	otherColors = []color.Color{
		color.RGBA{230, 159, 0, 255},  // orange
		color.RGBA{86, 180, 233, 255}, // sky blue
		color.RGBA{0, 0, 0, 255},      // black
		color.RGBA{120, 120, 120, 255},
	}
	gray = color.RGBA{90, 90, 90, 255}
)

// palette gives each result a color.
func palette(results []*sim.Result) []color.Color {
	out := make([]color.Color, len(results))
	used := map[string]bool{}
	next := 0
	for i, r := range results {
		if c, ok := schedulerColors[r.Scheduler]; ok && !used[r.Scheduler] {
			out[i] = c
			used[r.Scheduler] = true
			continue
		}
		out[i] = otherColors[next%len(otherColors)]
		next++
	}
	return out
}

var (
	dashed = []vg.Length{vg.Points(6), vg.Points(3)}
	dotted = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
)

// figure is a plot plus a legend drawn to its right, outside the data
// area: with up to four schedulers and stall markers an inside legend
// would cover the curves.
type figure struct {
	p      *plot.Plot
	grid   *plotter.Grid
	legend plot.Legend
}

func newFigure(title, xLabel, yLabel string) *figure {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 11)
		a.Tick.Label.Font = font.From(sans, 9.5)
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 225}
	grid.Horizontal.Color = color.Gray{Y: 225}
	p.Add(grid)

	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sans, 10)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(24)
	l.Padding = vg.Points(2)
	return &figure{p: p, grid: grid, legend: l}
}

// render draws the figure in "png" or "svg".
func (f *figure) render(format string) ([]byte, error) {
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(pngDPI))}
	case "svg":
		c = vgsvg.New(plotWidth, plotHeight)
	default:
		return nil, fmt.Errorf("report: unknown plot format %q", format)
	}
	dc := draw.New(c)
	// A white page under everything, legend included: SVG is transparent
	// otherwise, unreadable on a dark viewer.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	margin := vg.Points(8)
	legW := f.legend.Rectangle(dc).Size().X
	plotC := dc
	plotC.Max.X -= legW + 2*margin
	plotC.Min.Y += margin / 2
	plotC.Max.Y -= margin / 2
	plotC.Min.X += margin / 2
	f.p.Draw(plotC)

	legC := dc
	legC.Min.X = plotC.Max.X + margin
	legC.Max.Y -= margin / 2
	// Start the legend level with the top of the data area, under the
	// title.
	l := f.legend
	l.YOffs = -(f.p.Title.TextStyle.Rectangle(f.p.Title.Text).Size().Y + f.p.Title.Padding + margin)
	l.Draw(legC)

	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	if format == "svg" {
		// The SVG names the font without embedding it (embedding adds
		// ~0.5 MB per file); give viewers without Liberation Sans a
		// metric-compatible fallback instead of their default serif.
		return bytes.ReplaceAll(b.Bytes(), []byte("font-family:Liberation Sans;"),
			[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")), nil
	}
	return b.Bytes(), nil
}

// WritePlots creates dir and writes pods-over-time, utilization and
// turnaround-by-size, each as PNG and SVG. It returns the paths written,
// sorted.
func WritePlots(dir string, wl *sim.Workload, results []*sim.Result) ([]string, error) {
	if err := checkResults(results); err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return nil, errors.New("report: no results to plot")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := workloadName(wl, results)
	builders := []struct {
		stem  string
		build func(string, []*sim.Result) (*figure, error)
	}{
		{"pods-over-time", podsFigure},
		{"utilization", utilizationFigure},
		{"turnaround-by-size", turnaroundFigure},
	}
	var paths []string
	for _, b := range builders {
		fig, err := b.build(name, results)
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", b.stem, err)
		}
		for _, format := range []string{"png", "svg"} {
			data, err := fig.render(format)
			if err != nil {
				return nil, fmt.Errorf("report: %s.%s: %w", b.stem, format, err)
			}
			p := filepath.Join(dir, b.stem+"."+format)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return nil, err
			}
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// timeEnd is where the time axis ends: the latest moment any run reached.
func timeEnd(results []*sim.Result) float64 {
	end := 0.0
	for _, r := range results {
		if n := len(r.Timeline); n > 0 {
			end = math.Max(end, r.Timeline[n-1].T)
		}
		if finite(r.SimulatedUntil) {
			end = math.Max(end, r.SimulatedUntil)
		}
		if r.Stalled && finite(r.StalledAt) {
			end = math.Max(end, r.StalledAt)
		}
	}
	return end
}

// stepSeries is one timeline value as a downsampled step series. A
// stalled run's state is frozen from its last sample on, so its line is
// carried to the end of the axis: the clog is visible as the flat line it
// is, instead of the curve just stopping.
func stepSeries(r *sim.Result, end float64, value func(sim.Sample) float64) plotter.XYs {
	xs := make([]float64, len(r.Timeline))
	ys := make([]float64, len(r.Timeline))
	for i, s := range r.Timeline {
		xs[i], ys[i] = s.T, value(s)
	}
	xs, ys = downsampleStep(xs, ys, maxPlotPoints-1)
	if r.Stalled && len(xs) > 0 && xs[len(xs)-1] < end {
		xs, ys = append(xs, end), append(ys, ys[len(ys)-1])
	}
	pts := make(plotter.XYs, len(xs))
	for i := range xs {
		pts[i].X, pts[i].Y = xs[i], ys[i]
	}
	return pts
}

// strokeChunk is how many points one stroked path holds. The PNG
// rasterizer (freetype) slows down quadratically with the number of cells a
// single path covers on one pixel row: one 2,000-point path that swings
// up and down draws in minutes, the same points as short paths in well
// under a second.
const strokeChunk = 64

// stepLine draws pts as a step line, split into short paths (see
// strokeChunk) that share their end points so the line is unbroken. The
// first part doubles as the legend thumbnail.
func stepLine(pts plotter.XYs, c color.Color, dashes []vg.Length) ([]plot.Plotter, *plotter.Line, error) {
	newLine := func(pts plotter.XYs) (*plotter.Line, error) {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		// PostStep: a sample's value holds until the next sample.
		l.StepStyle = plotter.PostStep
		l.Color = c
		l.Width = vg.Points(1.6)
		l.Dashes = dashes
		return l, nil
	}
	if len(pts) == 0 {
		// Nothing to draw (an empty timeline); still a legend entry.
		thumb, err := newLine(plotter.XYs{{}, {X: 1}})
		return nil, thumb, err
	}
	var parts []plot.Plotter
	var first *plotter.Line
	for lo := 0; lo == 0 || lo < len(pts)-1; lo += strokeChunk {
		l, err := newLine(pts[lo:min(lo+strokeChunk+1, len(pts))])
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, l)
		if first == nil {
			first = l
		}
	}
	return parts, first, nil
}

// addStallMarkers draws a dotted vertical line at each stalled run's
// StalledAt, in the run's color, labelled "stall: <scheduler>" near the top
// (labels are staggered so two stalls at close times stay legible). top
// is the Y axis maximum. It reports whether any run stalled.
func addStallMarkers(f *figure, results []*sim.Result, colors []color.Color, top, end float64) (bool, error) {
	k := 0
	for i, r := range results {
		if !r.Stalled || !finite(r.StalledAt) {
			continue
		}
		line, err := plotter.NewLine(plotter.XYs{{X: r.StalledAt, Y: 0}, {X: r.StalledAt, Y: top}})
		if err != nil {
			return false, err
		}
		line.Color = colors[i]
		line.Width = vg.Points(1.3)
		line.Dashes = dotted
		y := top * (0.97 - 0.07*float64(k))
		lab, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: r.StalledAt, Y: y}},
			Labels: []string{"stall: " + r.Scheduler},
		})
		if err != nil {
			return false, err
		}
		sty := &lab.TextStyle[0]
		sty.Font = font.From(sans, 9)
		sty.Color = colors[i]
		sty.YAlign = text.YCenter
		// Text to the right of the line, or to its left near the right
		// edge so it stays inside the plot.
		if end > 0 && r.StalledAt > 0.75*end {
			sty.XAlign = text.XRight
			lab.Offset.X = -vg.Points(3)
		} else {
			lab.Offset.X = vg.Points(3)
		}
		f.p.Add(line, lab)
		k++
	}
	if k > 0 {
		thumb, err := plotter.NewLine(plotter.XYs{{}, {X: 1}})
		if err != nil {
			return false, err
		}
		thumb.Color, thumb.Width, thumb.Dashes = gray, vg.Points(1.3), dotted
		// The legend thumbnail of a line is horizontal; the entry says
		// what the vertical lines are.
		f.legend.Add("stall (dotted line)", thumb)
	}
	return k > 0, nil
}

func podsFigure(name string, results []*sim.Result) (*figure, error) {
	f := newFigure(name+": pods over time", "time (s)", "pods")
	colors := palette(results)
	end := timeEnd(results)
	top := 1.0
	for i, r := range results {
		running := stepSeries(r, end, func(s sim.Sample) float64 { return float64(s.Running) })
		pending := stepSeries(r, end, func(s sim.Sample) float64 { return float64(s.Pending) })
		for _, pts := range []plotter.XYs{running, pending} {
			for _, p := range pts {
				top = math.Max(top, p.Y)
			}
		}
		lr, thumb, err := stepLine(running, colors[i], nil)
		if err != nil {
			return nil, err
		}
		lp, _, err := stepLine(pending, colors[i], dashed)
		if err != nil {
			return nil, err
		}
		f.p.Add(lr...)
		f.p.Add(lp...)
		f.legend.Add(displayName(r), thumb)
	}
	top *= 1.12 // room for the stall labels above the curves
	for _, entry := range []struct {
		name   string
		dashes []vg.Length
	}{{"running (solid)", nil}, {"pending (dashed)", dashed}} {
		_, thumb, err := stepLine(plotter.XYs{{}, {X: 1}}, gray, entry.dashes)
		if err != nil {
			return nil, err
		}
		f.legend.Add(entry.name, thumb)
	}
	if _, err := addStallMarkers(f, results, colors, top, end); err != nil {
		return nil, err
	}
	f.p.X.Min, f.p.Y.Min, f.p.Y.Max = 0, 0, top
	if end > 0 {
		f.p.X.Max = end
	}
	f.p.X.Tick.Marker, f.p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	return f, nil
}

func utilizationFigure(name string, results []*sim.Result) (*figure, error) {
	f := newFigure(name+": CPU allocated over time", "time (s)", "CPU allocated (%)")
	colors := palette(results)
	end := timeEnd(results)
	const top = 112.0 // 100% plus room for the stall labels
	for i, r := range results {
		if r.TotalCPU <= 0 {
			// No capacity recorded: a percentage would be NaN.
			f.legend.Add(displayName(r) + ": no CPU total")
			continue
		}
		total := float64(r.TotalCPU)
		pts := stepSeries(r, end, func(s sim.Sample) float64 { return 100 * float64(s.UsedCPU) / total })
		parts, thumb, err := stepLine(pts, colors[i], nil)
		if err != nil {
			return nil, err
		}
		f.p.Add(parts...)
		f.legend.Add(displayName(r), thumb)
	}
	if _, err := addStallMarkers(f, results, colors, top, end); err != nil {
		return nil, err
	}
	f.p.X.Min, f.p.Y.Min, f.p.Y.Max = 0, 0, top
	if end > 0 {
		f.p.X.Max = end
	}
	f.p.X.Tick.Marker = niceTicks{}
	f.p.Y.Tick.Marker = plot.ConstantTicks(percentTicks())
	return f, nil
}

func percentTicks() []plot.Tick {
	var ticks []plot.Tick
	for v := 0; v <= 100; v += 10 {
		label := ""
		if v%20 == 0 {
			label = fmt.Sprint(v)
		}
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: label})
	}
	return ticks
}

// sizeCategory is one bar group of the turnaround chart: a job size, or
// a range of sizes when there are too many distinct ones.
type sizeCategory struct {
	lo, hi int
	label  string
}

// sizeCategories returns the categories covering every job size seen.
func sizeCategories(results []*sim.Result) []sizeCategory {
	seen := map[int]bool{}
	for _, r := range results {
		for _, j := range r.Jobs {
			seen[j.Size] = true
		}
	}
	sizes := make([]int, 0, len(seen))
	for s := range seen {
		sizes = append(sizes, s)
	}
	sort.Ints(sizes)
	var cats []sizeCategory
	if len(sizes) <= maxSizeCategories {
		for _, s := range sizes {
			cats = append(cats, sizeCategory{s, s, fmt.Sprint(s)})
		}
		return cats
	}
	// Power-of-two ranges: 1, 2, 3-4, 5-8, ... keeping only the ranges
	// that hold a size.
	lo, hi := 1, 1
	for i := 0; i < len(sizes); {
		if sizes[i] > hi {
			lo, hi = hi+1, hi*2
			continue
		}
		cat := sizeCategory{lo, hi, fmt.Sprint(lo)}
		if hi > lo {
			cat.label = fmt.Sprintf("%d-%d", lo, hi)
		}
		cats = append(cats, cat)
		for i < len(sizes) && sizes[i] <= hi {
			i++
		}
	}
	return cats
}

func turnaroundFigure(name string, results []*sim.Result) (*figure, error) {
	f := newFigure(name+": mean turnaround of completed jobs by size\n"+
		"bar labels: completed/jobs of that size, where not all completed",
		"job size (pods)", "mean turnaround (s)")
	f.p.Title.TextStyle.Font = font.From(sans, 12)
	colors := palette(results)
	cats := sizeCategories(results)
	if len(cats) == 0 {
		f.p.Title.Text = name + ": mean turnaround by size (no jobs)"
		return f, nil
	}
	type cell struct {
		mean      float64
		done, all int
	}
	cells := make([][]cell, len(results))
	maxMean := 0.0
	for i, r := range results {
		cells[i] = make([]cell, len(cats))
		sum := make([]float64, len(cats))
		for _, j := range r.Jobs {
			c := sort.Search(len(cats), func(k int) bool { return cats[k].hi >= j.Size })
			if c == len(cats) || j.Size < cats[c].lo {
				continue
			}
			cells[i][c].all++
			if j.Completed && finite(j.Turnaround) {
				cells[i][c].done++
				sum[c] += j.Turnaround
			}
		}
		for c := range cats {
			if cells[i][c].done > 0 {
				cells[i][c].mean = sum[c] / float64(cells[i][c].done)
				maxMean = math.Max(maxMean, cells[i][c].mean)
			}
		}
	}
	top := maxMean * 1.18 // room for the bar labels
	if top <= 0 {
		top = 1
	}

	// The data area is the figure minus the legend and the Y axis; give
	// each size 80% of its share, split between the schedulers.
	legW := f.legend.TextStyle.Width("coscheduling (model)") + f.legend.ThumbnailWidth
	dataW := plotWidth - legW - vg.Inch
	groupW := 0.8 * dataW / vg.Length(len(cats))
	// Capped: with few sizes, full-width bars read as blocks.
	barW := min(groupW/vg.Length(len(results)), vg.Points(48))
	labelFont := font.From(sans, 8)
	rotate := barW < vg.Points(22) // "none" and "3/10" fit across a wide bar only
	for i, r := range results {
		vals := make(plotter.Values, len(cats))
		var lxy plotter.XYs
		var ltext []string
		for c := range cats {
			vals[c] = cells[i][c].mean
			switch cl := cells[i][c]; {
			case cl.all == 0:
				// No job of that size in this run: nothing to say.
			case cl.done == 0:
				lxy, ltext = append(lxy, plotter.XY{X: float64(c), Y: 0}), append(ltext, "none")
			case cl.done < cl.all:
				lxy, ltext = append(lxy, plotter.XY{X: float64(c), Y: cl.mean}), append(ltext, fmt.Sprintf("%d/%d", cl.done, cl.all))
			}
		}
		bars, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return nil, err
		}
		bars.Color = colors[i]
		bars.LineStyle.Width = 0
		bars.Offset = (vg.Length(i) - vg.Length(len(results)-1)/2) * barW
		f.p.Add(bars)
		f.legend.Add(displayName(r), bars)
		if len(lxy) == 0 {
			continue
		}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: lxy, Labels: ltext})
		if err != nil {
			return nil, err
		}
		lab.Offset.X = bars.Offset
		for k := range lab.TextStyle {
			sty := &lab.TextStyle[k]
			sty.Font = labelFont
			// The scheduler's color says whose bar a "none" is.
			sty.Color = colors[i]
			if rotate {
				// Reads bottom to top, starting just above the bar.
				sty.Rotation = math.Pi / 2
				sty.XAlign, sty.YAlign = text.XLeft, text.YCenter
				lab.Offset.Y = vg.Points(2)
			} else {
				sty.XAlign, sty.YAlign = text.XCenter, text.YBottom
				lab.Offset.Y = vg.Points(2)
			}
		}
		f.p.Add(lab)
	}
	names := make([]string, len(cats))
	for c, cat := range cats {
		names[c] = cat.label
	}
	f.p.NominalX(names...)
	// Vertical grid lines would run through the middle of each group.
	f.grid.Vertical.Color = nil
	f.p.X.Min, f.p.X.Max = -0.5, float64(len(cats))-0.5
	f.p.Y.Min, f.p.Y.Max = 0, top
	f.p.Y.Tick.Marker = niceTicks{}
	return f, nil
}

// niceTicks labels five to nine round values (1, 2, 2.5 or 5 times a power
// of ten) with unlabelled minor ticks between them: gonum's default
// labels as few as three values, too few to read a time off the axis.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || !finite(lo) || !finite(hi) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	minor := step / 5
	// Labels are multiples of step: print as many decimals as step has,
	// so float noise (0.6000000000000001) never shows.
	prec := 0
	for p := 1.0; prec < 10 && math.Abs(step*p-math.Round(step*p)) > 1e-9*step*p; p *= 10 {
		prec++
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		label := ""
		if r := math.Mod(math.Abs(v), step); r < minor*1e-6 || step-r < minor*1e-6 {
			label = strconv.FormatFloat(v, 'f', prec, 64)
			if math.Abs(v) < step*1e-9 {
				label = "0" // not "-0"
			}
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}
