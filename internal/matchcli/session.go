package matchcli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Session runs commands against one matcher.
type Session struct {
	M *match.Matcher
	// Dir resolves relative jobspec paths; empty means the working directory.
	Dir string
	// Clock times matches for `stat`; tests pin it so output is stable.
	Clock func() time.Time
	// Diag receives diagnostics (reasons of invalid commands); may be nil.
	Diag io.Writer
	// ReadFile reads jobspec files; os.ReadFile unless replaced (the demo
	// reads from its embedded files).
	ReadFile func(string) ([]byte, error)

	nextID  int64
	timed   int64
	total   time.Duration
	minTime time.Duration
	maxTime time.Duration
}

// NewSession returns a session whose job ids start at 1.
func NewSession(m *match.Matcher) *Session {
	return &Session{M: m, Clock: time.Now, ReadFile: os.ReadFile, nextID: 1}
}

// Run executes commands from in until EOF or quit, writing one JSON line per
// command to out.
func (s *Session) Run(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		resp, quit := s.Exec(sc.Text())
		if quit {
			return nil
		}
		if resp == nil {
			continue
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Exec runs one command line. It returns nil for lines that are not
// commands, and quit=true for quit.
func (s *Session) Exec(line string) (resp *Response, quit bool) {
	f := strings.Fields(line)
	if len(f) == 0 || strings.HasPrefix(f[0], "#") {
		return nil, false
	}
	defer func() {
		if p := recover(); p != nil {
			s.diag("internal error on %q: %v\n%s", line, p, debug.Stack())
			resp = s.invalid(f[0], nil, fmt.Sprintf("internal error: %v", p))
		}
	}()
	switch f[0] {
	case "quit":
		return nil, true
	case "match":
		return s.match(f[1:]), false
	case "cancel":
		return s.cancel(f[1:]), false
	case "partial-cancel":
		return s.partialCancel(f[1:]), false
	case "info":
		return s.info(f[1:]), false
	case "set-status":
		return s.setStatus(f[1:]), false
	case "stat":
		return s.stat(), false
	}
	return s.invalid(f[0], nil, fmt.Sprintf("unknown command %q", f[0])), false
}

func (s *Session) diag(format string, args ...any) {
	if s.Diag != nil {
		fmt.Fprintf(s.Diag, format+"\n", args...)
	}
}

func (s *Session) invalid(cmd string, id *int64, reason string) *Response {
	s.diag("%s: %s", cmd, reason)
	return &Response{Cmd: cmd, JobID: id, Status: match.Invalid.String(), Reason: reason}
}

func (s *Session) match(args []string) *Response {
	if len(args) == 0 {
		return s.invalid("match", nil, "missing operation")
	}
	op, ok := match.ParseOp(args[0])
	if !ok {
		return s.invalid("match", nil, fmt.Sprintf("unknown match operation %q", args[0]))
	}
	cmd := "match " + args[0]
	if len(args) != 2 {
		return s.invalid(cmd, nil, "expected exactly one jobspec file")
	}
	path := args[1]
	if s.Dir != "" && !filepath.IsAbs(path) {
		path = filepath.Join(s.Dir, path)
	}
	data, err := s.ReadFile(path)
	if err != nil {
		return s.invalid(cmd, nil, err.Error())
	}
	js, err := jobspec.Parse(data)
	if err != nil {
		return s.invalid(cmd, nil, fmt.Sprintf("%s: %v", args[1], err))
	}
	start := s.Clock()
	res, err := s.M.Match(op, js, s.nextID, 0)
	s.record(s.Clock().Sub(start))
	if err != nil {
		return s.invalid(cmd, nil, err.Error())
	}
	resp := &Response{Cmd: cmd, Status: res.Status.String(), Reason: res.Reason}
	switch res.Status {
	case match.Allocated, match.Reserved, match.Busy, match.Unsatisfiable:
		if op != match.Satisfiability {
			resp.JobID = i64(s.nextID)
			s.nextID++
		}
	case match.Invalid:
		s.diag("%s: %s", cmd, res.Reason)
	}
	if res.OK() {
		resp.At = i64(res.At)
		resp.Nodes = nodeCounts(res.Nodes)
	}
	return resp
}

func (s *Session) record(d time.Duration) {
	if s.timed == 0 || d < s.minTime {
		s.minTime = d
	}
	if d > s.maxTime {
		s.maxTime = d
	}
	s.timed++
	s.total += d
}

func nodeCounts(nodes []match.NodeUsage) map[string]NodeCounts {
	out := make(map[string]NodeCounts, len(nodes))
	for _, n := range nodes {
		out[n.Name] = NodeCounts{Core: n.Core, GPU: n.GPU, Memory: n.Memory}
	}
	return out
}

func parseJobID(cmd string, args []string, extra bool) (int64, string) {
	if len(args) == 0 || (!extra && len(args) != 1) {
		return 0, fmt.Sprintf("usage: %s JOBID", cmd)
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("job id %q is not an integer", args[0])
	}
	return id, ""
}

func (s *Session) cancel(args []string) *Response {
	id, bad := parseJobID("cancel", args, false)
	if bad != "" {
		return s.invalid("cancel", nil, bad)
	}
	if err := s.M.Cancel(id); err != nil {
		return s.invalid("cancel", i64(id), fmt.Sprintf("job %d does not exist or is already canceled", id))
	}
	return &Response{Cmd: "cancel", JobID: i64(id), Status: match.Canceled.String()}
}

func (s *Session) info(args []string) *Response {
	id, bad := parseJobID("info", args, false)
	if bad != "" {
		return s.invalid("info", nil, bad)
	}
	ji, ok := s.M.Info(id)
	if !ok {
		return s.invalid("info", i64(id), fmt.Sprintf("job %d does not exist or is already canceled", id))
	}
	return &Response{Cmd: "info", JobID: i64(id), Status: ji.Status.String(), At: i64(ji.At), Nodes: nodeCounts(ji.Nodes)}
}

func (s *Session) partialCancel(args []string) *Response {
	const cmd = "partial-cancel"
	id, bad := parseJobID(cmd, args, true)
	if bad != "" {
		return s.invalid(cmd, nil, bad)
	}
	if len(args) < 2 {
		return s.invalid(cmd, i64(id), "usage: partial-cancel JOBID VERTEX...")
	}
	var vs []int32
	for _, name := range args[1:] {
		v, err := s.lookup(name)
		if err != nil {
			return s.invalid(cmd, i64(id), err.Error())
		}
		vs = append(vs, v)
	}
	full, err := s.M.PartialCancel(id, vs)
	if err != nil {
		return s.invalid(cmd, i64(id), fmt.Sprintf("job %d does not exist or is already canceled", id))
	}
	if full {
		return &Response{Cmd: cmd, JobID: i64(id), Status: match.Canceled.String()}
	}
	ji, _ := s.M.Info(id)
	return &Response{Cmd: cmd, JobID: i64(id), Status: ji.Status.String(), At: i64(ji.At), Nodes: nodeCounts(ji.Nodes)}
}

func (s *Session) setStatus(args []string) *Response {
	const cmd = "set-status"
	if len(args) != 2 || (args[1] != "up" && args[1] != "down") {
		return s.invalid(cmd, nil, "usage: set-status VERTEX up|down")
	}
	v, err := s.lookup(args[0])
	if err != nil {
		return s.invalid(cmd, nil, err.Error())
	}
	if args[1] == "down" {
		err = s.M.MarkDown(v)
	} else {
		err = s.M.MarkUp(v)
	}
	if err != nil {
		return s.invalid(cmd, nil, err.Error())
	}
	return &Response{Cmd: cmd, Status: strings.ToUpper(args[1])}
}

// lookup finds a vertex by containment path or by a name no other vertex
// shares.
func (s *Session) lookup(name string) (int32, error) {
	g := s.M.Graph()
	if strings.HasPrefix(name, "/") {
		if v, ok := g.ByPath(name); ok {
			return v, nil
		}
		return resource.None, fmt.Errorf("no vertex at path %s", name)
	}
	switch vs := g.ByName(name); len(vs) {
	case 1:
		return vs[0], nil
	case 0:
		return resource.None, fmt.Errorf("no vertex named %s", name)
	default:
		return resource.None, fmt.Errorf("%d vertices are named %s; give a path", len(vs), name)
	}
}

func (s *Session) stat() *Response {
	st := s.M.Stats()
	out := &Stats{
		Vertices: st.Vertices, Edges: st.Edges, Policy: s.M.Policy().Name, Jobs: st.Jobs,
		MatchOK: st.MatchOK, MatchFailed: st.MatchFailed, Reservations: st.Reservations,
		Visited: st.VisitedTotal,
	}
	if s.timed > 0 {
		out.MinMs = ms(s.minTime)
		out.MaxMs = ms(s.maxTime)
		out.AvgMs = ms(s.total / time.Duration(s.timed))
	}
	return &Response{Cmd: "stat", Status: "OK", Stats: out}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
