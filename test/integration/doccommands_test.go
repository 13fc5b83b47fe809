package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fluence-sched/fluence/internal/docsh"
)

// Every command a page of the docs shows in a shell block (```sh, or a
// "$ " line of a ```console block) is run by a test, or is in
// docExemptions with the reason it is not. Four tests run them:
//
//   - TestTaskGuides: the kubectl commands of docs/tasks, and the
//     `fluence up` that run-workloads.md starts, with its arguments;
//   - TestInstallDocs: the helm commands of docs/install.md;
//   - TestCranePushDocs (internal/image): its crane push commands;
//   - TestDocCommands: every other command of docCommandPages.
//
// TestDocsCommandsCovered holds them to it.

// A docRunner is a test that runs the commands of some pages that start
// with a prefix, as docsh.Commands picks them.
type docRunner struct {
	test   string // the test
	file   string // its source, from this directory
	call   string // where that source picks the commands
	pages  string // a glob, from the repository's root
	prefix string
	// only: TestDocCommands leaves these commands to that test, which has
	// what they need (a chart's cluster, a registry).
	only bool
}

var docRunners = []docRunner{
	{"TestTaskGuides", "taskguides_test.go", `docCommands(t, guide, "kubectl ")`, "docs/tasks/*.md", "kubectl ", false},
	{"TestTaskGuides", "taskguides_test.go", `docCommands(t, "../../docs/tasks/run-workloads.md", "go run ./cmd/fluence up ")`, "docs/tasks/run-workloads.md", "go run ./cmd/fluence up ", false},
	{"TestInstallDocs", "installdocs_test.go", `docCommands(t, "../../docs/install.md", "helm ")`, "docs/install.md", "helm ", true},
	{"TestCranePushDocs", "../../internal/image/push_test.go", `docShellLines(t, "../../docs/install.md", "crane push ")`, "docs/install.md", "crane push ", true},
}

// docCommandPages are the pages TestDocCommands runs, in this order, on
// the `fluence up` the first one starts.
var docCommandPages = []string{"docs/up.md", "docs/scheduler.md", "README.md"}

// docExemptions are the commands no test runs, each with the reason.
var docExemptions = map[string]string{
	// README.md
	"make test":                 "what CI runs (.ci/run): the whole suite, this test with it",
	"go run ./cmd/fluence demo": "run8 live under three schedulers, about 8.5 minutes on 2 cores; TestDemoReduced replays its first 20 jobs at 20x",
	// README.md and docs/scheduler.md
	"go run ./cmd/fluence scheduler --config deploy/scheduler-config.yaml": "in a pod, with its service account; TestSchedulerCommand runs the binary with this file and a kubeconfig",

	// docs/install.md (and the first, docs/scheduler.md)
	"make image": "compiles fluence for two platforms, minutes on 2 cores; TestImage (internal/image) builds and checks the same image",
	"make image IMAGE=registry.example.com/fluence:0.1.0 VERSION=0.1.0": "as make image, under another name",
	"kind load image-archive _output/image/fluence.tar":                 "needs a kind cluster (a container runtime)",
	"docker load -i _output/image/fluence-linux-amd64.docker.tar":       "needs a Docker daemon",

	"kubectl create clusterrolebinding alice-fluence-inspect --clusterrole fluence-inspect --user alice":                 "binds a user of the reader's cluster; TestInspect binds service accounts to the same ClusterRole and Role and reads through both routes",
	"kubectl -n fluence-system create rolebinding alice-fluence-inspect-proxy --role fluence-inspect-proxy --user alice": "as the binding above",
	"kubectl -n fluence-system rollout status deploy/fluence":                                                            "needs kubelets for fluence's own pods; TestOneSchedulerProcedure waits for every rollout of the procedure the same way",
	// docs/scheduler.md
	"helm install fluence deploy/helm/fluence --namespace fluence-system --create-namespace --set image.repository=registry.example.com/fluence --set plugin.queuePolicy=easy": "pulls an image from a registry that does not exist; TestInstallDocs installs the same chart as install.md says",
	"kubectl -n fluence-system port-forward deploy/fluence 10259 &":                                      "port-forward needs a kubelet; fluence up's nodes are simulated",
	"kubectl fluence queue --scheduler-url https://127.0.0.1:10259 --scheduler-insecure-skip-tls-verify": "reads through the port-forward above; TestInspect runs this queue command at the scheduler's port",

	// docs/release.md
	"make release":               "compiles for four platforms, many minutes; TestRelease builds the same release for this platform (internal/release)",
	"make release VERSION=0.2.0": "as make release, another version",
	"make release IMAGE=registry.example.com/fluence:0.1.0":                                                                                                    "as make release, another image name",
	"cd _output/release && sha256sum --check SHA256SUMS":                                                                                                       "needs make release's output; TestRelease checks every artefact against SHA256SUMS",
	"grype sbom:_output/release/fluence-0.1.0-linux-amd64.cdx.json":                                                                                            "grype, a third party's scanner, is not installed; TestSBOM (internal/release) checks the SBOM",
	"crane push _output/release/image/oci ghcr.io/fluence-sched/fluence:0.1.0":                                                                                 "publishes the release to the project's registry",
	"crane push _output/release/image/oci registry.example.com/fluence:0.1.0":                                                                                  "a registry that does not exist; TestCranePushDocs runs install.md's crane push of an image layout",
	"helm install fluence _output/release/fluence-0.1.0.tgz --namespace fluence-system --create-namespace":                                                     "needs make release's chart and a kubelet that pulls its image; TestRelease applies that chart, rendered by helm",
	"helm install fluence _output/release/fluence-0.1.0.tgz --namespace fluence-system --create-namespace --set image.repository=registry.example.com/fluence": "as the install above, with the image from a registry that does not exist",
	"helm push _output/release/fluence-0.1.0.tgz oci://registry.example.com/charts":                                                                            "a registry that does not exist",
	"helm install fluence oci://registry.example.com/charts/fluence --version 0.1.0 -n fluence-system --create-namespace":                                      "the chart from a registry that does not exist",
}

// docCheck is what a command of docCommandPages must print, beyond
// succeeding: output matching a regular expression (multi-line mode), or
// what a function checks. A console block's output is checked too
// (docOutputShape).
type docCheck struct {
	command string // the command's Key
	output  string
	check   func(t *testing.T, out string)
}

var docChecks = []docCheck{
	{command: "kubectl get nodes", output: `^node-3\s+Ready\s`},
	{command: "kubectl get pods -o wide", output: `(?:^lammps-\S+ +\S+ +\S+ +\d+ +\S+ +\S+ +node-\d .*\n){4}`}, // four, on nodes
	{command: "kubectl get podgroups.scheduling.x-k8s.io", output: `^solver\s+(Scheduled|Running)\s+3\s`},
	{command: "kubectl fluence queue -A", output: `^team\s+1\s+b\s+reserved\s(?s:.*)^team\s+2\s+c\s+pending\s`},
	{command: "kubectl fluence nodes -o wide", output: `^node-[0-2]\s+Ready\s+4/4\s.*team/a\(1\)`},
	{command: "kubectl fluence graph", output: `^\s*└── node node-3: cpu 4, memory 16Gi, pods 110, gpu ×2$`},
	{command: "go run ./cmd/fluence sim --seeds 1-10", output: `^seeds 1-10: 10 runs per scheduler`},
	{command: "go run ./cmd/fluence sim --workload run10", output: `^workload run10-indexed-jobs: 50 jobs(?s:.*)^fluence\s+50/50\s+no\s`},
	{command: "go run ./cmd/fluence sim --synthetic nodes=1000,groups=10000 --schedulers fluence --queue-policy easy", output: `^fluence\s+10000/10000\s+no\s`},
	{command: "go run ./cmd/fluence sim --workload my.yaml --policy first --queue-policy conservative", output: `^workload my-workload: (?s:.*)^fluence\s+4/4\s+no\s.*match policy first, queue policy conservative`},
	// up.md: the error kube-scheduler logs at start with GenericWorkload on
	// and GangScheduling off stays off the terminal.
	{command: "go run ./cmd/fluence up --feature-gates GenericWorkload=true,WorkloadWithJob=true",
		check: func(t *testing.T, out string) {
			if !strings.Contains(out, "feature-gates: GenericWorkload=true,WorkloadWithJob=true\nready: true\n") {
				t.Errorf("no feature-gates line before ready:\n%s", out)
			}
			if strings.Contains(out, "GangScheduling plugin is not set") {
				t.Errorf("kube-scheduler's error on the disabled GangScheduling reached the terminal:\n%s", out)
			}
		}},
	// The README shows the JSON it prints, in the block after the command.
	{command: "go run ./cmd/fluence match --generate 'cluster[1]->node[4]->socket[2]->{core[16],gpu[2]}' --policy lonode <<'EOF'\nmatch allocate internal/matchcli/testdata/jobspecs/gpuslot.yaml\nmatch allocate_orelse_reserve internal/matchcli/testdata/jobspecs/node2x.yaml\ninfo 1\nquit\nEOF",
		check: func(t *testing.T, out string) {
			want := docBlock(t, "README.md", "```json")
			if out != want {
				t.Errorf("fluence match prints\n%s\nthe README shows\n%s", out, want)
			}
		}},
}

// docSetups give a command what the page says the reader has, before it
// first runs. Keyed by the command's Key.
var docSetups = map[string]func(t *testing.T, r *docRun){
	// README: "your own workload file": the example of docs/sim-workload.md.
	"go run ./cmd/fluence sim --workload my.yaml --policy first --queue-policy conservative": func(t *testing.T, r *docRun) {
		writeFile(t, filepath.Join(r.scratch, "my.yaml"), docBlock(t, "docs/sim-workload.md", "```yaml"))
	},
	// scheduler.md: "outside a cluster, set clientConnection.kubeconfig in
	// the configuration".
	"go run ./cmd/fluence scheduler --config my-config.yaml --bind-address 127.0.0.1 --secure-port 10269": func(t *testing.T, r *docRun) {
		writeFile(t, filepath.Join(r.scratch, "my-config.yaml"), setClient(fluenceConfig(t, nil), "kubeconfig", r.ready["kubeconfig"]))
	},
	// scheduler.md's example: three 4-CPU nodes; a's two 4-CPU pods run,
	// declared for 10 minutes; b waits for a's planned end, c behind b; d
	// asks more than the cluster has; one of e's three pods exists.
	"kubectl fluence groups -A": setUpInspectExample,
}

// TestDocCommands runs the commands of docCommandPages as a reader would,
// in order, against the `fluence up` the pages start: every one but those
// exempt and those only another test can run (docRunners). A command that
// another page shows too runs again where the page's flow needs it. A
// command runs in bash from the repository's
// root with kubectl (from the Kubernetes module) on PATH and GOBIN on PATH
// too (`go install ./cmd/kubectl-fluence`); `go run ./cmd/fluence ...` is
// the binary the test built, run in a scratch directory that links to
// everything at the root (so that sim-results/, my.yaml and my-config.yaml
// stay out of the checkout). Servers run as processes: `fluence up` until
// the next one (its ready lines set KUBECONFIG and the FLUENCE_ variables,
// and an `export` line of the page must be what it printed), `fluence
// scheduler` until its /healthz answers.
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	r := &docRun{parent: t, fluence: buildFluence(t), bins: t.TempDir(), scratch: scratchRoot(t)}
	if err := os.Symlink(kubectlBinary(t), filepath.Join(r.bins, "kubectl")); err != nil {
		t.Fatal(err)
	}
	only := map[string]string{}
	for _, rn := range docRunners {
		if rn.only {
			for _, k := range runnerKeys(t, rn) {
				only[k] = rn.test
			}
		}
	}
	checked, setUp := map[string]bool{}, map[string]bool{}
	for _, page := range docCommandPages {
		cmds, err := docsh.Shell(filepath.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(page, func(t *testing.T) {
			for _, c := range cmds {
				key := c.Key()
				if reason, ok := docExemptions[key]; ok {
					t.Logf("%s:%d not run: %s", page, c.Line, reason)
					continue
				}
				if test, ok := only[key]; ok {
					t.Logf("%s:%d run by %s", page, c.Line, test)
					continue
				}
				if setup := docSetups[key]; setup != nil && !setUp[key] {
					setUp[key] = true
					setup(t, r)
				}
				out := r.run(t, c)
				for _, dc := range docChecks {
					if dc.command != key {
						continue
					}
					checked[key] = true
					if dc.check != nil {
						dc.check(t, out)
					} else if !regexp.MustCompile("(?m)" + dc.output).MatchString(out) {
						t.Errorf("%s:%d %s: the output does not match %q:\n%s", page, c.Line, c.Text, dc.output, out)
					}
				}
			}
		})
	}
	for _, dc := range docChecks {
		if !checked[dc.command] {
			t.Errorf("no page runs %q any more: its check went unused", dc.command)
		}
	}
}

// docRun is the state TestDocCommands carries from command to command.
type docRun struct {
	parent  *testing.T // the servers live until it ends
	fluence string     // the binary `go run ./cmd/fluence` stands for
	bins    string     // kubectl and GOBIN, on PATH
	scratch string     // where `go run ./cmd/fluence` runs
	up      *process   // the fluence up running
	upOut   *syncBuffer
	ready   map[string]string // its ready lines
	sample  map[string]string // the ready lines the page shows for it
}

func (r *docRun) env() []string {
	env := append(os.Environ(), "GOBIN="+r.bins, "PATH="+r.bins+string(os.PathListSeparator)+os.Getenv("PATH"))
	if r.ready != nil {
		env = append(env, "KUBECONFIG="+r.ready["kubeconfig"], "FLUENCE_SCHEDULER_URL="+r.ready["scheduler-url"],
			"FLUENCE_SCHEDULER_CA_FILE="+r.ready["scheduler-ca-file"])
	}
	return env
}

const goRunFluence = "go run ./cmd/fluence "

// run runs one command of a page and returns its output.
func (r *docRun) run(t *testing.T, c docsh.Command) string {
	t.Helper()
	key := c.Key()
	switch {
	case strings.HasPrefix(key, goRunFluence+"up"):
		return r.startUp(t, c)
	case strings.HasPrefix(key, goRunFluence+"scheduler "):
		return r.runScheduler(t, c)
	case strings.HasPrefix(key, "export "):
		r.export(t, c)
		return ""
	}
	dir, text := "../..", c.Text
	if strings.HasPrefix(text, goRunFluence) {
		dir, text = r.scratch, shellQuote(r.fluence)+" "+strings.TrimPrefix(text, goRunFluence)
	}
	out := runShell(t, r.env(), dir, text)
	if c.Console {
		checkDocOutput(t, c, out)
	}
	return out
}

// startUp stops the fluence up running, if any, and starts the page's.
func (r *docRun) startUp(t *testing.T, c docsh.Command) string {
	t.Helper()
	if r.up != nil {
		if err := r.up.interrupt(syscall.SIGINT, time.Minute); err != nil {
			t.Fatalf("fluence up: %v", err)
		}
	}
	start := time.Now()
	r.up, r.upOut = r.start(t, fluenceArgs(t, c.Key()))
	r.ready = waitUpReady(t, r.up)
	out := r.upOut.String()
	t.Logf("$ %s (ready after %s)\n%s", c.Text, time.Since(start).Round(100*time.Millisecond), strings.TrimRight(out, "\n"))
	r.sample = nil
	if c.Console {
		// What it prints up to its ready line, as the page shows it; the
		// page's work directory is in /tmp, the default $TMPDIR.
		n := strings.Count(c.Output, "\n")
		lines := strings.SplitAfter(strings.ReplaceAll(out, filepath.Join(os.TempDir(), "fluence-up-"), "/tmp/fluence-up-"), "\n")
		checkDocOutput(t, c, strings.Join(lines[:min(n, len(lines))], ""))
		r.sample = map[string]string{}
		for _, l := range strings.Split(c.Output, "\n") {
			if k, v, ok := strings.Cut(l, ": "); ok {
				r.sample[k] = v
			}
		}
	}
	return r.up.logs.String() // stdout and stderr
}

// upExports are the variables fluence up says to export, by ready line.
var upExports = map[string]string{"KUBECONFIG": "kubeconfig", "FLUENCE_SCHEDULER_URL": "scheduler-url", "FLUENCE_SCHEDULER_CA_FILE": "scheduler-ca-file"}

// export checks a page's export line: it sets what fluence up's printed
// instructions set, to the values of the ready lines the page shows, and
// fluence up printed the same line with its own values (which the
// commands get).
func (r *docRun) export(t *testing.T, c docsh.Command) {
	t.Helper()
	if r.up == nil {
		t.Fatalf("line %d: %s, before any fluence up", c.Line, c.Text)
	}
	real := []string{"export"}
	for _, a := range strings.Fields(c.Key())[1:] {
		name, value, _ := strings.Cut(a, "=")
		line, ok := upExports[name]
		if !ok {
			t.Fatalf("line %d: fluence up prints no %s", c.Line, name)
		}
		if r.sample != nil && value != r.sample[line] {
			t.Errorf("line %d: %s=%s, but the page shows fluence up printing %s: %s", c.Line, name, value, line, r.sample[line])
		}
		real = append(real, name+"="+r.ready[line])
	}
	printed := strings.Join(real, " ")
	if !slices.Contains(strings.Split(r.upOut.String(), "\n"), "  "+printed) {
		t.Errorf("line %d: fluence up's instructions do not say %q:\n%s", c.Line, printed, r.upOut.String())
	}
	t.Logf("$ %s\n(fluence up printed, and the commands get: %s)", c.Text, printed)
}

// runScheduler starts fluence scheduler as the page says and waits until
// its secure port's /healthz answers at the page's address, then stops it.
func (r *docRun) runScheduler(t *testing.T, c docsh.Command) string {
	t.Helper()
	args := fluenceArgs(t, c.Key())
	addr, port := "0.0.0.0", "10259"
	for i, a := range args[:len(args)-1] {
		switch a {
		case "--bind-address":
			addr = args[i+1]
		case "--secure-port":
			port = args[i+1]
		}
	}
	start := time.Now()
	p, _ := r.start(t, args)
	url := "https://" + net.JoinHostPort(addr, port) + "/healthz"
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("it exited")
		default:
		}
		resp, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && string(body) == "ok", nil
	})
	if err != nil {
		t.Fatalf("%s: %s never answered: %v\n%s", c.Text, url, err, tail(p.logs.String(), 40))
	}
	t.Logf("$ %s\n(%s answered ok after %s; stopping it)", c.Text, url, time.Since(start).Round(100*time.Millisecond))
	if err := p.interrupt(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("fluence scheduler: %v", err)
	}
	return p.logs.String()
}

// start starts the fluence binary in the scratch directory; it is killed,
// if still running, when the whole test ends.
func (r *docRun) start(t *testing.T, args []string) (*process, *syncBuffer) {
	t.Helper()
	p := &process{cmd: exec.Command(r.fluence, args...), logs: &syncBuffer{}, exited: make(chan struct{})}
	stdout := &syncBuffer{}
	p.cmd.Dir = r.scratch
	p.cmd.Stdout, p.cmd.Stderr = io.MultiWriter(stdout, p.logs), p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	r.parent.Cleanup(func() {
		// SIGINT first: fluence up removes its work directory (etcd's data,
		// over 100 MB) only when it stops in order.
		if p.interrupt(syscall.SIGINT, time.Minute) != nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if r.parent.Failed() {
			r.parent.Logf("fluence %s output:\n%s", args[0], tail(p.logs.String(), 40))
		}
	})
	return p, stdout
}

// fluenceArgs are the arguments of a `go run ./cmd/fluence` command line
// that runs as a process, not through a shell.
func fluenceArgs(t *testing.T, key string) []string {
	t.Helper()
	if !strings.HasPrefix(key, goRunFluence) || strings.ContainsAny(key, "'\"\\$&|;<>\n") {
		t.Fatalf("%q is not a plain go run ./cmd/fluence command line", key)
	}
	return strings.Fields(strings.TrimPrefix(key, goRunFluence))
}

// runShell runs text in bash, in dir, and returns its output; a failure
// or a command still running after 3 minutes fails the test.
func runShell(t *testing.T, env []string, dir, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	cmd.Dir = dir
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", text, err, out)
	}
	t.Logf("$ %s (%s)\n%s", text, time.Since(start).Round(100*time.Millisecond), strings.TrimRight(string(out), "\n"))
	return string(out)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// scratchRoot is a directory that links to every entry of the repository's
// root: relative paths resolve as from the root, and what is written there
// stays out of the checkout.
func scratchRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// docBlock is the first block of a page that opens with fence.
func docBlock(t *testing.T, page, fence string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../..", page))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+fence+"\n")
	block, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed {
		t.Fatalf("%s has no %s block", page, fence)
	}
	return block + "\n"
}

// checkDocOutput checks a console block's output against what the command
// printed: the same lines, but for numbers (counts, times, ports, random
// names) and the width of blank runs (columns).
func checkDocOutput(t *testing.T, c docsh.Command, out string) {
	t.Helper()
	if c.Output == "" {
		return
	}
	re := docOutputShape(c.Output)
	if got := trimLines(out); !re.MatchString(got) {
		t.Errorf("line %d: $ %s prints\n%s\nwhich has not the shape the page shows:\n%s", c.Line, c.Text, got, c.Output)
	}
}

var shapeToken = regexp.MustCompile(`\d+|[ \t]+`)

// docOutputShape is a regular expression for output shaped as sample.
func docOutputShape(sample string) *regexp.Regexp {
	sample = trimLines(sample)
	var b strings.Builder
	b.WriteString(`^`)
	last := 0
	for _, m := range shapeToken.FindAllStringIndex(sample, -1) {
		b.WriteString(regexp.QuoteMeta(sample[last:m[0]]))
		if sample[m[0]] == ' ' || sample[m[0]] == '\t' {
			b.WriteString(`[ \t]+`)
		} else {
			b.WriteString(`\d+`)
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(sample[last:]))
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// trimLines cuts the blanks that end each line and the blank lines at the end.
func trimLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

// runnerKeys are the commands a docRunner runs.
func runnerKeys(t *testing.T, rn docRunner) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("../..", rn.pages))
	if err != nil || len(pages) == 0 {
		t.Fatalf("%s: no page %s: %v", rn.test, rn.pages, err)
	}
	var keys []string
	for _, p := range pages {
		for _, line := range docCommands(t, p, rn.prefix) {
			keys = append(keys, docsh.Command{Text: line}.Key())
		}
	}
	return keys
}

// The guard: every command of every page's shell blocks (README.md and
// every page under docs) is run by a test (docRunners, or TestDocCommands
// for docCommandPages) or exempt, with a reason; no exemption is stale or
// also run; every runner still picks its commands as docRunners says; and
// no page shows a command in an indented block, which nothing reads.
// Static: it runs with -short too.
func TestDocsCommandsCovered(t *testing.T) {
	pages := []string{"README.md"}
	err := filepath.WalkDir("../../docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, strings.TrimPrefix(path, "../../"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	run := map[string]string{} // command: the test that runs it
	only := map[string]bool{}
	for _, rn := range docRunners {
		src, err := os.ReadFile(rn.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), rn.call) {
			t.Errorf("%s no longer picks its commands with %s (%s): update docRunners", rn.test, rn.call, rn.file)
		}
		keys := runnerKeys(t, rn)
		if len(keys) == 0 {
			t.Errorf("%s runs no command of %s that starts with %q", rn.test, rn.pages, rn.prefix)
		}
		for _, k := range keys {
			run[k] = rn.test
			only[k] = only[k] || rn.only
		}
	}
	all := map[string][]string{} // command: where the pages show it
	for _, page := range pages {
		cmds, err := docsh.Shell(filepath.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		onPage := slices.Contains(docCommandPages, page)
		for _, c := range cmds {
			k := c.Key()
			all[k] = append(all[k], fmt.Sprintf("%s:%d", page, c.Line))
			if _, exempt := docExemptions[k]; onPage && !exempt && !only[k] && run[k] == "" {
				run[k] = "TestDocCommands"
			}
		}
		checkIndented(t, page)
	}
	for _, page := range docCommandPages {
		if !slices.ContainsFunc(pages, func(p string) bool { return p == page }) {
			t.Errorf("docCommandPages names %s, which does not exist", page)
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		_, exempt := docExemptions[k]
		switch {
		case run[k] != "" && exempt:
			t.Errorf("%s: %q is run by %s and exempt: drop the exemption", all[k][0], k, run[k])
		case run[k] == "" && !exempt:
			t.Errorf("%s: %q is run by no test: add its page to docCommandPages (with the setup and output checks it needs), or exempt it with the reason", strings.Join(all[k], ", "), k)
		}
	}
	for k := range docExemptions {
		if all[k] == nil {
			t.Errorf("docExemptions has %q, which no page shows any more", k)
		}
	}
	for k := range docSetups {
		if all[k] == nil {
			t.Errorf("docSetups has %q, which no page shows any more", k)
		}
	}
	t.Logf("%d commands on %d pages: %d exempt, the others run", len(all), len(pages), len(docExemptions))
}

// indentedCommand is a line of an indented code block that looks like a
// command.
var indentedCommand = regexp.MustCompile(`^(    |\t)\s*(\$ |(kubectl|go|helm|make|crane|docker|kind|export|curl|grype|sha256sum) )`)

// checkIndented fails for a command in an indented code block: a line
// indented by four blanks after a blank line, outside fences and lists.
func checkIndented(t *testing.T, page string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../..", page))
	if err != nil {
		t.Fatal(err)
	}
	inFence, prevBlank, inList := false, true, false
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inFence = !inFence
		case inFence:
		case trimmed == "":
		case prevBlank && !inList && indentedCommand.MatchString(line):
			t.Errorf("%s:%d shows a command in an indented block: put it in a ```sh block", page, i+1)
		}
		if !inFence && trimmed != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			inList = regexp.MustCompile(`^([-*+]|\d+\.) `).MatchString(line)
		}
		prevBlank = trimmed == ""
	}
}

// setUpInspectExample makes the state scheduler.md's example of kubectl
// fluence shows, on fluence up's nodes (node-3, the GPU node, kept out):
// in namespace team, a's two 4-CPU pods run on two of the three nodes,
// declared for 10 minutes; b, two 4-CPU pods, waits for a's planned end,
// and c, the same, behind b; lab's d asks more than the cluster has;
// late's e has one of its three pods. The namespaces go when the page is
// done.
func setUpInspectExample(t *testing.T, r *docRun) {
	c := upCluster(t, r.ready["kubeconfig"])
	for _, ns := range []string{"team", "lab", "late"} {
		if _, err := c.Client.CoreV1().Namespaces().Create(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		})
	}
	noGPU := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "nvidia.com/gpu.present", Operator: corev1.NodeSelectorOpDoesNotExist},
		}}},
	}}}
	group := func(ns, name string, size, exist int, cpu string) []*corev1.Pod {
		var pods []*corev1.Pod
		for _, p := range groupPods(name, size, cpu, 0, 10*time.Minute)[:exist] {
			p.Namespace, p.Spec.Affinity = ns, noGPU
			pods = append(pods, p)
		}
		return pods
	}
	// Runs until deleted: no run time.
	c.createPods(group("team", "a", 2, 2, "4")...)
	if _, err := c.waitPodsBoundIn("team", time.Minute, 2); err != nil {
		t.Fatal(err)
	}
	c.createPods(group("team", "b", 2, 2, "4")...)
	waitFluence(t, r, []string{"explain", "b", "-n", "team"}, `(?m)^State:\s+reserved$`)
	c.createPods(group("team", "c", 2, 2, "4")...)
	c.createPods(group("lab", "d", 2, 2, "64")...)
	c.createPods(group("late", "e", 3, 1, "1")...)
	waitFluence(t, r, []string{"groups", "-A"}, `(?ms)^lab\s+d\s+rejected\s.*^late\s+e\s+gathering\s.*^team\s+a\s+placed\s+2\s+2\s+2\s+2\s.*^team\s+b\s+queued\s.*\sin \S+$.*^team\s+c\s+queued\s`)
}

// waitFluence runs kubectl fluence with args until its output matches.
func waitFluence(t *testing.T, r *docRun, args []string, want string) {
	t.Helper()
	re := regexp.MustCompile(want)
	var out []byte
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		cmd := exec.Command(filepath.Join(r.bins, "kubectl-fluence"), args...)
		cmd.Env = r.env()
		out, _ = cmd.CombinedOutput()
		return re.Match(out), nil
	})
	if err != nil {
		t.Fatalf("kubectl fluence %s never matched %s:\n%s", strings.Join(args, " "), want, out)
	}
}

// waitPodsBoundIn waits until n pods of the namespace are bound.
func (c *cluster) waitPodsBoundIn(ns string, timeout time.Duration, n int) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pods = list.Items
		bound := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound >= n, nil
	})
	if err != nil {
		return pods, fmt.Errorf("%d pods of %s not bound within %v", n, ns, timeout)
	}
	return pods, nil
}

// The shape of a console block's output: numbers and the widths of blank
// runs may differ, nothing else.
func TestDocOutputShape(t *testing.T) {
	sample := "NAME   STATE      WAITED   START\nb      queued     10s      in 9m40s  \n\n"
	for out, want := range map[string]bool{
		"NAME   STATE      WAITED   START\nb      queued     10s      in 9m40s\n":    true,
		"NAME   STATE    WAITED   START\nb      queued   3s       in 9m57s\n":        true,
		"NAME   STATE      WAITED   START\nb      reserved   10s      in 9m40s\n":    false,
		"NAME   STATE      WAITED   START\nb      queued     10s      in 9m40s\nc\n": false,
		"NAME   STATE      WAITED   START\nb      queued     10s      <none>\n":      false,
		"NAME STATE WAITED START\nb queued 1m5s in 9m40s\n":                          false,
	} {
		if got := docOutputShape(sample).MatchString(trimLines(out)); got != want {
			t.Errorf("%q has the shape of %q: %v, want %v", out, sample, got, want)
		}
	}
}
