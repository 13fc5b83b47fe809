package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// JobsCSVHeader is the header of jobs-<scheduler>.csv.
var JobsCSVHeader = []string{"name", "size", "cpu_millicores", "submit", "start", "end", "completed", "rejected", "wait", "turnaround"}

// TimelineCSVHeader is the header of timeline-<scheduler>.csv.
var TimelineCSVHeader = []string{"t", "pending", "running", "used_cpu_millicores", "cpu_allocated_pct", "running_jobs", "completed"}

// JobRow is one job in jobs-<scheduler>.json; null where the CSV has an
// empty field (never arrived, never started, never completed).
type JobRow struct {
	Name       string   `json:"name"`
	Size       int      `json:"size"`
	CPU        int64    `json:"cpu_millicores"`
	Submit     *float64 `json:"submit"`
	Start      *float64 `json:"start"`
	End        *float64 `json:"end"`
	Completed  bool     `json:"completed"`
	Rejected   bool     `json:"rejected"`
	Wait       *float64 `json:"wait"`
	Turnaround *float64 `json:"turnaround"`
}

// WriteFiles creates dir and writes, per result, jobs-<scheduler>.csv,
// jobs-<scheduler>.json and timeline-<scheduler>.csv, plus summary.json
// (WriteJSONSummary) and summary.txt (Table). It returns the paths
// written, sorted. Timelines are written in full: these are the data, only
// the plots are downsampled.
func WriteFiles(dir string, wl *sim.Workload, results []*sim.Result) ([]string, error) {
	if err := checkResults(results); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	}
	for i, stem := range fileStems(results) {
		r := results[i]
		jobsCSV, err := jobsCSV(r)
		if err != nil {
			return nil, err
		}
		jobsJSON, err := jobsJSON(r)
		if err != nil {
			return nil, err
		}
		timeline, err := timelineCSV(r)
		if err != nil {
			return nil, err
		}
		for _, f := range []struct {
			name string
			data []byte
		}{
			{"jobs-" + stem + ".csv", jobsCSV},
			{"jobs-" + stem + ".json", jobsJSON},
			{"timeline-" + stem + ".csv", timeline},
		} {
			if err := write(f.name, f.data); err != nil {
				return nil, err
			}
		}
	}
	var sum bytes.Buffer
	if err := WriteJSONSummary(&sum, wl, results); err != nil {
		return nil, err
	}
	if err := write("summary.json", sum.Bytes()); err != nil {
		return nil, err
	}
	var txt bytes.Buffer
	if err := Table(&txt, wl, results); err != nil {
		return nil, err
	}
	if err := write("summary.txt", txt.Bytes()); err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}

// jobTime is a job's time (submit, start, end) when it happened: the
// simulator uses -1 for "never".
func jobTime(t float64) *float64 {
	if t < 0 {
		return nil
	}
	return num(t)
}

func jobRow(j sim.JobResult) JobRow {
	return JobRow{
		Name: j.Name, Size: j.Size, CPU: j.CPU,
		Submit: jobTime(j.Submit), Start: jobTime(j.Start), End: jobTime(j.End),
		Completed: j.Completed, Rejected: j.Rejected,
		Wait: num(j.Wait), Turnaround: num(j.Turnaround),
	}
}

// formatNum writes a number (from num, so already rounded) for CSV:
// empty when unknown.
func formatNum(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

func jobsCSV(r *sim.Result) ([]byte, error) {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	if err := cw.Write(JobsCSVHeader); err != nil {
		return nil, err
	}
	for _, j := range r.Jobs {
		row := jobRow(j)
		rec := []string{row.Name, strconv.Itoa(row.Size), strconv.FormatInt(row.CPU, 10),
			formatNum(row.Submit), formatNum(row.Start), formatNum(row.End),
			strconv.FormatBool(row.Completed), strconv.FormatBool(row.Rejected),
			formatNum(row.Wait), formatNum(row.Turnaround)}
		if err := cw.Write(rec); err != nil {
			return nil, err
		}
	}
	cw.Flush()
	return b.Bytes(), cw.Error()
}

func jobsJSON(r *sim.Result) ([]byte, error) {
	rows := make([]JobRow, 0, len(r.Jobs))
	for _, j := range r.Jobs {
		rows = append(rows, jobRow(j))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rows); err != nil {
		return nil, fmt.Errorf("report: jobs of %s: %w", r.Scheduler, err)
	}
	return b.Bytes(), nil
}

func timelineCSV(r *sim.Result) ([]byte, error) {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	if err := cw.Write(TimelineCSVHeader); err != nil {
		return nil, err
	}
	for _, s := range r.Timeline {
		pct := ""
		if r.TotalCPU > 0 {
			pct = formatNum(num(100 * float64(s.UsedCPU) / float64(r.TotalCPU)))
		}
		rec := []string{formatNum(num(s.T)), strconv.Itoa(s.Pending), strconv.Itoa(s.Running),
			strconv.FormatInt(s.UsedCPU, 10), pct, strconv.Itoa(s.RunningJobs), strconv.Itoa(s.Completed)}
		if err := cw.Write(rec); err != nil {
			return nil, err
		}
	}
	cw.Flush()
	return b.Bytes(), cw.Error()
}
