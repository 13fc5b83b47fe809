package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fluence-sched/fluence/internal/up"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

const examplesDir = "../../docs/examples"

// workloadGates are the Kubernetes gates the native PodGroup and Jobs
// with a PodGroup from the Job controller need.
const workloadGates = "GenericWorkload=true,WorkloadWithJob=true"

// example is what applying one file of docs/examples must lead to.
type example struct {
	file string
	// groups must each bind whole, with the key fluence gives them: with
	// the workload gates off and on (a Job of completions = parallelism
	// then gets its PodGroup from the Job controller).
	groups []exampleGroup
	// rejected names a pod that must get FluenceGroupRejected.
	rejected string
	// operator is set for kinds an operator reconciles: `fluence up` runs
	// none, so the test installs a stand-in CRD and checks only that the
	// object is stored.
	operator *workloadCRD
	// needsGates: its API is served only with the workload gates on.
	needsGates bool
}

type exampleGroup struct {
	prefix      string // the pods' names start with it (Job pods: <job>-)
	size        int
	keyOff      string // fluence's group key, gates off
	keyOnPrefix string // the key's start, gates on ("" = keyOff)
}

var examples = []example{
	{file: "fluence-labels.yaml", groups: []exampleGroup{{prefix: "lammps-", size: 4, keyOff: "default/lammps"}}},
	{file: "scheduler-plugins-podgroup.yaml", groups: []exampleGroup{{prefix: "solver-", size: 3, keyOff: "default/solver"}}},
	{file: "topology-podgroup.yaml", needsGates: true, groups: []exampleGroup{{prefix: "stencil-", size: 4, keyOnPrefix: "default/native-podgroup:stencil"}}},
	{file: "native-podgroup.yaml", needsGates: true, groups: []exampleGroup{{prefix: "train-", size: 4, keyOnPrefix: "default/native-podgroup:train"}}},
	{file: "workload-with-job.yaml", groups: []exampleGroup{{prefix: "indexed-", size: 4, keyOff: "default/job:indexed", keyOnPrefix: "default/native-podgroup:indexed-"}}},
	{file: "minicluster-shaped-job.yaml", groups: []exampleGroup{{prefix: "flux-sample-", size: 4, keyOff: "default/job:flux-sample", keyOnPrefix: "default/native-podgroup:flux-sample-"}}},
	{file: "mpijob-shaped-podgroup.yaml", groups: []exampleGroup{{prefix: "pi-", size: 3, keyOff: "default/pi"}}},
	{file: "gpu-group.yaml", groups: []exampleGroup{{prefix: "gpu-train-", size: 2, keyOff: "default/gpu-train"}}},
	{file: "impossible-group.yaml", rejected: "huge-0"},
	{file: "jobset.yaml", operator: &jobSetCRD},
	{file: "jobset-gang.yaml", operator: &jobSetCRD},
	{file: "mpijob.yaml", operator: &mpiJobCRD},
	{file: "minicluster.yaml", operator: &miniClusterCRD},
}

// Every file in docs/examples has an entry above, so a new example cannot
// go untested.
func TestUpExamplesListed(t *testing.T) {
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range examples {
		listed = append(listed, e.file)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") && !slices.Contains(listed, e.Name()) {
			t.Errorf("docs/examples/%s is not in the examples table of up_test.go", e.Name())
		}
	}
	for _, f := range listed {
		if _, err := os.Stat(filepath.Join(examplesDir, f)); err != nil {
			t.Errorf("the examples table names %s: %v", f, err)
		}
	}
}

// `fluence up` as a user runs it: the binary as its own process, every file
// of docs/examples applied through client-go exactly as written, each group
// bound whole (one allocation holding all its pods) or, for the impossible
// one, rejected with an event; then SIGINT, and nothing is left: the
// process exited 0, the API server's port is closed, and the work directory
// and the kubeconfig are gone.
//
// It runs twice: with Kubernetes' workload gates off (the native PodGroup
// API is not served, so that example is refused as kubectl refuses it) and
// on (the native PodGroup binds whole, and Indexed Jobs get their PodGroup
// from the Job controller).
func TestUp(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	bin := buildFluence(t)
	t.Run("gates off", func(t *testing.T) {
		kubeconfig := filepath.Join(t.TempDir(), "fluence-up.kubeconfig") // outside the work directory
		runUp(t, bin, false, "--nodes", "8", "--cpu", "4", "--memory", "16Gi", "--gpu-nodes", "1", "--gpus", "2",
			"--racks", "2", "--node-labels", "pool=try", "--kubeconfig", kubeconfig)
	})
	t.Run("gates on", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "work") // named, not yet there
		runUp(t, bin, true, "--nodes", "8", "--feature-gates", workloadGates, "--dir", dir)
	})
}

func runUp(t *testing.T, bin string, gates bool, args ...string) {
	proc := startProcess(t, bin, append([]string{"up"}, args...)...)
	ready := waitUpReady(t, proc)
	cfg, err := clientcmd.BuildConfigFromFlags("", ready["kubeconfig"])
	if err != nil {
		t.Fatalf("the printed kubeconfig: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &cluster{t: t, Ctx: ctx, Client: kubernetes.NewForConfigOrDie(cfg), Config: cfg, NS: metav1.NamespaceDefault}
	checkUpNodes(t, c, ready, gates)

	// Operators' kinds: stand-in CRDs (fluence up runs no operator).
	installed := map[*workloadCRD]bool{} // two examples may share a kind
	for _, e := range examples {
		if e.operator != nil && !installed[e.operator] {
			installed[e.operator] = true
			c.installWorkloadCRD(*e.operator)
		}
	}
	for _, e := range examples {
		objs := decodeExample(t, e.file)
		errs := applyObjects(c, objs)
		if e.needsGates && !gates {
			// The API server does not serve scheduling.k8s.io/v1beta1:
			// kubectl says "no matches for kind"; the pods, which
			// would lose their spec.schedulingGroup, are not sent either.
			if len(errs) == 0 || !meta.IsNoMatchError(errs[0]) {
				t.Errorf("%s without the gates: %v, want its PodGroup refused as not served", e.file, errs)
			}
			continue
		}
		for _, err := range errs {
			t.Errorf("%s: %v", e.file, err)
		}
		if e.operator != nil {
			for _, o := range objs {
				if _, err := dynamic.NewForConfigOrDie(cfg).Resource(e.operator.gvr).Namespace(c.NS).Get(ctx, o.GetName(), metav1.GetOptions{}); err != nil {
					t.Errorf("%s: %s %s not stored: %v", e.file, o.GetKind(), o.GetName(), err)
				}
			}
		}
	}
	for _, e := range examples {
		if e.needsGates && !gates {
			continue
		}
		for _, g := range e.groups {
			key := g.keyOff
			if gates && g.keyOnPrefix != "" {
				key = g.keyOnPrefix
			}
			checkBoundWhole(t, c, e.file, g, key)
		}
		if e.rejected != "" {
			c.waitForEvent(time.Minute, e.rejected, "FluenceGroupRejected", "cannot be placed")
			if n := c.boundCount("huge-0", "huge-1", "huge-2"); n != 0 {
				t.Errorf("%s: %d pods of the impossible group bound", e.file, n)
			}
		}
	}
	if gates {
		checkJobPodGroup(t, c, "indexed")
	}
	// kubectl fluence reaches the scheduler's secure port with the printed
	// kubeconfig and certificate: delegated authentication through the
	// local API server, the serving certificate verified.
	out, err := c.kubectlFluenceErr(ready["kubeconfig"], "--scheduler-url", ready["scheduler-url"],
		"--scheduler-ca-file", ready["scheduler-ca-file"], "groups", "-n", metav1.NamespaceDefault)
	if err != nil {
		t.Errorf("kubectl fluence groups against fluence up: %v\n%s", err, out)
	} else {
		requireLine(t, "kubectl fluence groups against fluence up", out, "^huge +rejected +3 ")
		requireLine(t, "kubectl fluence groups against fluence up", out, "^lammps +placed +4 +4 +4 +4 ")
	}
	stopUp(t, proc, ready)
}

// waitUpReady waits for the "ready: true" line and returns the "key: value"
// lines before it.
func waitUpReady(t *testing.T, proc *process) map[string]string {
	t.Helper()
	var lines map[string]string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-proc.exited:
			return false, errors.New("fluence up exited")
		default:
		}
		lines = map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(proc.logs.String()))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ": "); ok && !strings.Contains(k, " ") {
				if _, seen := lines[k]; !seen {
					lines[k] = v
				}
			}
		}
		return lines["ready"] == "true", nil
	})
	if err != nil {
		t.Fatalf("fluence up not ready: %v", err)
	}
	for _, k := range []string{"api-server", "kubeconfig", "work-dir", "nodes", "schedulers"} {
		if lines[k] == "" {
			t.Fatalf("no %q line before ready: %v", k, lines)
		}
	}
	return lines
}

// checkUpNodes compares the nodes on the API server with the flags.
func checkUpNodes(t *testing.T, c *cluster, ready map[string]string, gates bool) {
	t.Helper()
	nodes, err := c.Client.CoreV1().Nodes().List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(len(nodes.Items)) != ready["nodes"] {
		t.Errorf("%d nodes, the ready lines say %s", len(nodes.Items), ready["nodes"])
	}
	gpuNodes, racks := 0, map[string]bool{}
	for _, n := range nodes.Items {
		if q := n.Status.Allocatable[gpuResource]; q.Value() > 0 {
			gpuNodes++
			if n.Labels[up.GPULabel] != "true" {
				t.Errorf("GPU node %s lacks %s=true", n.Name, up.GPULabel)
			}
		}
		if r := n.Labels[up.RackLabel]; r != "" {
			racks[r] = true
		}
		if !gates && n.Labels["pool"] != "try" {
			t.Errorf("node %s lacks the --node-labels label pool=try: %v", n.Name, n.Labels)
		}
	}
	if gpuNodes != 1 {
		t.Errorf("%d GPU nodes, want 1", gpuNodes)
	}
	if want := map[bool]int{false: 2, true: 0}[gates]; len(racks) != want {
		t.Errorf("racks %v, want %d", racks, want)
	}
}

// decodeExample reads a file of docs/examples as the API objects it holds.
func decodeExample(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(filepath.Join(examplesDir, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// applyObjects creates the objects in order, as `kubectl apply -f` does on
// a fresh cluster (namespaced ones without a namespace go to c.NS, the
// kubeconfig's default), and returns the errors, each naming its object.
// Resources are mapped through discovery, so a kind the API server does
// not serve gives a NoKindMatchError.
func applyObjects(c *cluster, objs []*unstructured.Unstructured) []error {
	groups, err := restmapper.GetAPIGroupResources(discovery.NewDiscoveryClientForConfigOrDie(c.Config))
	if err != nil {
		return []error{err}
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn := dynamic.NewForConfigOrDie(c.Config)
	var errs []error
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err))
			continue
		}
		ri := dynamic.ResourceInterface(dyn.Resource(m.Resource))
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := o.GetNamespace()
			if ns == "" {
				ns = c.NS
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Create(c.Ctx, o, metav1.CreateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("creating %s %s: %w", gvk.Kind, o.GetName(), err))
		}
	}
	return errs
}

// checkBoundWhole waits for the group's pods to be bound and checks that
// one allocation holds exactly them: fluence writes the group key and the
// allocation id on every pod it binds, and binds an allocation only once
// all of it is reserved.
func checkBoundWhole(t *testing.T, c *cluster, file string, g exampleGroup, key string) {
	t.Helper()
	pods, err := c.waitPodsBound(90*time.Second, g.size, metav1.ListOptions{}, func(p *corev1.Pod) bool {
		return strings.HasPrefix(p.Name, g.prefix)
	})
	if err != nil {
		var seen []string
		for _, p := range pods {
			seen = append(seen, p.Name+"@"+p.Spec.NodeName)
		}
		t.Errorf("%s: the %d pods %s* not all bound: %v", file, g.size, g.prefix, seen)
		return
	}
	records := map[string][]string{}
	for _, p := range pods {
		rec := p.Annotations[plugin.AllocationKey]
		records[rec] = append(records[rec], p.Name)
	}
	if len(records) != 1 || len(pods) != g.size {
		t.Errorf("%s: pods %s* in %d allocations, want all %d in one: %v", file, g.prefix, len(records), g.size, records)
		return
	}
	for rec := range records {
		if k, _, _ := strings.Cut(rec, "@"); !strings.HasPrefix(k, key) {
			t.Errorf("%s: allocation %q, want the group %s…", file, rec, key)
		}
	}
}

// checkJobPodGroup checks that the Job controller made the Job's PodGroup
// (controller ownerReference) and that its pods name it.
func checkJobPodGroup(t *testing.T, c *cluster, job string) {
	t.Helper()
	pgs, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var name string
	for _, pg := range pgs.Items {
		if ref := metav1.GetControllerOf(&pg); ref != nil && ref.Kind == "Job" && ref.Name == job {
			name = pg.Name
			if mc := pg.Spec.SchedulingPolicy.Gang; mc == nil || mc.MinCount != 4 {
				t.Errorf("PodGroup %s of Job %s: policy %+v, want gang minCount 4", pg.Name, job, pg.Spec.SchedulingPolicy)
			}
		}
	}
	if name == "" {
		t.Fatalf("no PodGroup controlled by Job %s", job)
	}
	pods, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if sg := p.Spec.SchedulingGroup; sg == nil || sg.PodGroupName == nil || *sg.PodGroupName != name {
			t.Errorf("pod %s: schedulingGroup %+v, want PodGroup %s", p.Name, sg, name)
		}
	}
}

// stopUp interrupts fluence up and checks it left nothing behind.
func stopUp(t *testing.T, proc *process, ready map[string]string) {
	t.Helper()
	if err := proc.interrupt(syscall.SIGINT, time.Minute); err != nil {
		t.Fatalf("fluence up: %v", err)
	}
	if code := proc.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("fluence up exited %d after SIGINT, want 0", code)
	}
	u, err := url.Parse(ready["api-server"])
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after fluence up exited", u.Host)
	}
	for _, path := range []string{ready["work-dir"], ready["kubeconfig"]} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s still there after fluence up exited (%v)", path, err)
		}
	}
	if !strings.Contains(proc.logs.String(), "fluence up: stopped; removed "+ready["work-dir"]) {
		t.Errorf("no line saying what was removed")
	}
	// By default only errors reach the terminal: a healthy run shows none.
	for _, line := range strings.Split(proc.logs.String(), "\n") {
		if len(line) > 1 && (line[0] == 'E' || line[0] == 'F') && line[1] >= '0' && line[1] <= '9' {
			t.Errorf("fluence up logged: %s", line)
		}
	}
}
