package integration

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/transport"
)

// The fault injector sits in the HTTP transport of the scheduler under test
// (schedulerOptions.WrapTransport) and makes a fraction of its Binding calls
// (POST /api/v1/namespaces/NS/pods/NAME/binding) fail, as an API server or
// a network would:
//
//   - faultServerError: HTTP 500 InternalError; the Binding is not sent;
//   - faultConflict: HTTP 409 Conflict; the Binding is not sent;
//   - faultLostResponse: the Binding IS sent and the API server binds the
//     pod, but the response is dropped and the client gets a timeout error
//     (a response lost on the way back);
//   - faultTimeout: the client gets a timeout error after Delay; the
//     Binding is not sent.
//
// Which attempt fails, and how, is a pure function of the seed, the pod's
// namespace/name and the number of the attempt for that pod (1, 2, ...):
// the same run of the scheduler sees the same faults whatever the order
// in which its goroutines send their calls.
//
// Every request through the transport is counted (bindings, other writes,
// reads; watches apart), so a test can tell whether the scheduler still
// writes anything once nothing is pending.

type faultKind int

const (
	faultServerError faultKind = iota
	faultConflict
	faultLostResponse
	faultTimeout
	numFaultKinds
)

func (k faultKind) String() string {
	switch k {
	case faultServerError:
		return "500"
	case faultConflict:
		return "409"
	case faultLostResponse:
		return "lost-response"
	case faultTimeout:
		return "timeout"
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// faultConfig sets what the injector does. The zero value injects nothing.
type faultConfig struct {
	// Fraction of Binding calls that fail, in [0, 1].
	Fraction float64
	// Seed chooses which calls fail and how.
	Seed uint64
	// Weights are the relative shares of each kind among the faults; all
	// zero means equal shares.
	Weights [numFaultKinds]float64
	// Delay is how long a faultTimeout takes, and how much longer than the
	// real call a faultLostResponse takes; default 200 ms.
	Delay time.Duration
}

// injectedFault is one failed Binding call.
type injectedFault struct {
	At      time.Time
	Pod     string // namespace/name
	Attempt int    // the pod's nth Binding call
	Kind    faultKind
	// Status is what the API server answered a forwarded call
	// (faultLostResponse): 201 when the pod was bound, 0 when the call
	// itself failed.
	Status int
}

func (f injectedFault) String() string {
	s := fmt.Sprintf("%s %s attempt %d: %s", f.At.Format("15:04:05.000"), f.Pod, f.Attempt, f.Kind)
	if f.Kind == faultLostResponse {
		s += fmt.Sprintf(" (API server answered %d)", f.Status)
	}
	return s
}

// apiCounts counts the requests that went through the transport.
type apiCounts struct {
	Bindings int64 // Binding POSTs (faulted or not)
	Writes   int64 // every POST, PUT, PATCH and DELETE, Bindings included
	Events   int64 // writes to events (events.k8s.io or core), in Writes
	Reads    int64 // GETs other than watches
	Watches  int64 // watch requests started
}

func (a apiCounts) sub(b apiCounts) apiCounts {
	return apiCounts{a.Bindings - b.Bindings, a.Writes - b.Writes, a.Events - b.Events, a.Reads - b.Reads, a.Watches - b.Watches}
}

type faultInjector struct {
	cfg        faultConfig
	cumulative [numFaultKinds]float64 // cumulative weights, normalized to 1

	mu       sync.Mutex
	attempts map[string]int // pod → Binding calls seen
	faults   []injectedFault
	boundOK  map[string]int // pod → Binding calls the API server accepted (201), lost responses included

	kinds                                    [numFaultKinds]atomic.Int64
	bindings, writes, events, reads, watches atomic.Int64
	// Binding calls in flight now and at most; connections the transport
	// opened (rather than reused) for any request.
	inflight, maxInflight, newConns atomic.Int64
}

func newFaultInjector(cfg faultConfig) *faultInjector {
	if cfg.Delay <= 0 {
		cfg.Delay = 200 * time.Millisecond
	}
	f := &faultInjector{cfg: cfg, attempts: map[string]int{}, boundOK: map[string]int{}}
	total := 0.0
	for _, w := range cfg.Weights {
		total += max(w, 0)
	}
	acc := 0.0
	for k := range numFaultKinds {
		w := 1.0 / float64(numFaultKinds)
		if total > 0 {
			w = max(cfg.Weights[k], 0) / total
		}
		acc += w
		f.cumulative[k] = acc
	}
	f.cumulative[numFaultKinds-1] = 1
	return f
}

// bindingPath matches the Binding subresource of a pod.
var bindingPath = regexp.MustCompile(`^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$`)

// wrap is a transport.WrapperFunc: the injector in front of rt.
func (f *faultInjector) wrap(rt http.RoundTripper) http.RoundTripper {
	return &faultTransport{f: f, next: rt}
}

var _ transport.WrapperFunc = (*faultInjector)(nil).wrap

type faultTransport struct {
	f    *faultInjector
	next http.RoundTripper
}

func (t *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f := t.f
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused {
				f.newConns.Add(1)
			}
		},
	}))
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
			f.watches.Add(1)
		} else {
			f.reads.Add(1)
		}
		return t.next.RoundTrip(req)
	}
	f.writes.Add(1)
	if strings.Contains(req.URL.Path, "/events") {
		f.events.Add(1)
	}
	m := bindingPath.FindStringSubmatch(req.URL.Path)
	if req.Method != http.MethodPost || m == nil {
		return t.next.RoundTrip(req)
	}
	f.bindings.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInflight.Load()
		if n <= m || f.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	pod := m[1] + "/" + m[2]
	f.mu.Lock()
	f.attempts[pod]++
	attempt := f.attempts[pod]
	f.mu.Unlock()

	kind, faulted := f.decide(pod, attempt)
	if !faulted {
		resp, err := t.next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusCreated {
			f.mu.Lock()
			f.boundOK[pod]++
			f.mu.Unlock()
		}
		return resp, err
	}
	fault := injectedFault{At: time.Now(), Pod: pod, Attempt: attempt, Kind: kind}
	defer func() {
		f.kinds[kind].Add(1)
		f.mu.Lock()
		f.faults = append(f.faults, fault)
		f.mu.Unlock()
	}()

	switch kind {
	case faultLostResponse:
		resp, err := t.next.RoundTrip(req)
		if err == nil {
			fault.Status = resp.StatusCode
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated {
				f.mu.Lock()
				f.boundOK[pod]++
				f.mu.Unlock()
			}
		}
		if werr := sleepCtx(req, f.cfg.Delay); werr != nil {
			return nil, werr
		}
		return nil, &injectedTimeout{what: "the response to the Binding of " + pod + " was lost (the API server received it)"}
	case faultTimeout:
		closeBody(req)
		if werr := sleepCtx(req, f.cfg.Delay); werr != nil {
			return nil, werr
		}
		return nil, &injectedTimeout{what: "the Binding of " + pod + " timed out (not sent)"}
	case faultConflict:
		closeBody(req)
		return statusResponse(req, http.StatusConflict, metav1.StatusReasonConflict,
			fmt.Sprintf("Operation cannot be fulfilled on pods/binding %q: injected conflict (fluence fault injection)", m[2])), nil
	default:
		closeBody(req)
		return statusResponse(req, http.StatusInternalServerError, metav1.StatusReasonInternalError,
			"Internal error occurred: injected server error (fluence fault injection)"), nil
	}
}

// decide returns whether the attempt-th Binding call of pod fails, and how.
func (f *faultInjector) decide(pod string, attempt int) (faultKind, bool) {
	if f.cfg.Fraction <= 0 {
		return 0, false
	}
	h := fnv.New64a()
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], f.cfg.Seed)
	binary.LittleEndian.PutUint64(buf[8:], uint64(attempt))
	h.Write(buf[:])
	h.Write([]byte(pod))
	u := float64(splitmix64(h.Sum64())>>11) / (1 << 53) // uniform in [0, 1)
	if u >= f.cfg.Fraction {
		return 0, false
	}
	r := u / f.cfg.Fraction // uniform in [0, 1) again
	for k := range numFaultKinds {
		if r < f.cumulative[k] {
			return k, true
		}
	}
	return numFaultKinds - 1, true
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// counts returns the request counts so far.
func (f *faultInjector) counts() apiCounts {
	return apiCounts{f.bindings.Load(), f.writes.Load(), f.events.Load(), f.reads.Load(), f.watches.Load()}
}

// faultCounts returns the faults injected so far by kind, and their total.
func (f *faultInjector) faultCounts() (map[faultKind]int64, int64) {
	out := map[faultKind]int64{}
	var total int64
	for k := range numFaultKinds {
		out[k] = f.kinds[k].Load()
		total += out[k]
	}
	return out, total
}

// summary is one line: Binding calls, faults by kind.
func (f *faultInjector) summary() string {
	byKind, total := f.faultCounts()
	calls := f.bindings.Load()
	var parts []string
	for k := range numFaultKinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, byKind[k]))
	}
	pct := 0.0
	if calls > 0 {
		pct = 100 * float64(total) / float64(calls)
	}
	return fmt.Sprintf("%d Binding calls (at most %d at once), %d faulted (%.1f%%): %s; %d connections opened",
		calls, f.maxInflight.Load(), total, pct, strings.Join(parts, ", "), f.newConns.Load())
}

// faultsOf returns the faults injected on the pod's Binding calls, oldest
// first.
func (f *faultInjector) faultsOf(pod string) []injectedFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []injectedFault
	for _, x := range f.faults {
		if x.Pod == pod {
			out = append(out, x)
		}
	}
	return out
}

// attemptsOf returns how many Binding calls the pod's scheduler sent, and
// how many of them the API server accepted (lost responses included).
func (f *faultInjector) attemptsOf(pod string) (calls, accepted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[pod], f.boundOK[pod]
}

// allFaults returns every injected fault, oldest first.
func (f *faultInjector) allFaults() []injectedFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]injectedFault(nil), f.faults...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// injectedTimeout is the error of a timed-out or lost call: a net.Error
// whose Timeout() is true, as http.Client's own timeouts are.
type injectedTimeout struct{ what string }

func (e *injectedTimeout) Error() string {
	return "fluence fault injection: timeout awaiting response headers: " + e.what
}
func (e *injectedTimeout) Timeout() bool   { return true }
func (e *injectedTimeout) Temporary() bool { return true }

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// sleepCtx waits d, or returns the request context's error first.
func sleepCtx(req *http.Request, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-req.Context().Done():
		return req.Context().Err()
	}
}

// statusResponse is an API server's error answer: a metav1.Status in JSON.
func statusResponse(req *http.Request, code int, reason metav1.StatusReason, msg string) *http.Response {
	body, err := json.Marshal(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Code:     int32(code),
	})
	if err != nil {
		panic(err)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// envFloat01 reads a float in [0, 1] from the environment, else def.
func envFloat01(name string, def float64) float64 {
	v, err := strconv.ParseFloat(os.Getenv(name), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
		return def
	}
	return v
}

// explainViolations appends to each invariant violation that names pods
// the faults injected on those pods' Binding calls.
func (f *faultInjector) explainViolations(violations []string) []string {
	out := make([]string, 0, len(violations))
	for _, v := range violations {
		var notes []string
		if i := strings.Index(v, "; pods: "); i >= 0 {
			for _, pod := range strings.Split(v[i+len("; pods: "):], ",") {
				for _, x := range f.faultsOf(pod) {
					notes = append(notes, x.String())
				}
			}
		}
		if len(notes) > 0 {
			v += "\n    faults on these pods' Bindings: " + strings.Join(notes, "; ")
		}
		out = append(out, v)
	}
	return out
}
