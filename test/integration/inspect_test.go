package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	kubeapiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/internal/kubectlfluence"
	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// The inspection API and kubectl fluence as a user meets them: the chart
// installed on an API server with its aggregation layer and RBAC, the
// scheduler binary run as the chart runs it, and kubectl fluence reading a
// placed, a reserved, a waiting and a rejected group through the API server
// (the chart's APIService) and directly from the scheduler's port. Users
// without rights, and requests without credentials, are refused; the API
// server's service proxy is shown to drop the caller's identity.
func TestInspect(t *testing.T) {
	helm := helmBinary(t)
	// Both routes: the opt-in APIService, and the Service proxy (the default).
	objs := renderChart(t, helm, "--set", "inspect.apiService=true")
	deployment := findObject(t, objs, "Deployment", releaseName)
	configMap := findObject(t, objs, "ConfigMap", releaseName+"-config")
	apiService := findObject(t, objs, "APIService", "v1alpha1."+inspect.GroupName)
	inspectService := findObject(t, objs, "Service", releaseName+"-inspect")
	config, _, _ := unstructured.NestedString(configMap.Object, "data", "config.yaml")
	args := containerArgs(t, deployment, configMap)
	if svc, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name"); svc != inspectService.GetName() {
		t.Fatalf("the APIService names service %q, the chart makes %q", svc, inspectService.GetName())
	}

	// No kube-proxy runs here: the aggregation layer reaches the chart's
	// Service at the scheduler's port on this machine.
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	schedulerURL := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	restore := kubeapiserverapp.SetServiceResolverForTests(serviceAt{namespace: releaseNamespace, name: inspectService.GetName(), url: schedulerURL})
	c := newFullCluster(t, "--authorization-mode=Node,RBAC")
	restore()
	if _, err := c.Client.CoreV1().Namespaces().Create(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.apply(objs)
	proc := c.startChartScheduler(t, deployment, config, args, ports[0])
	waitReady(t, c.Ctx, schedulerURL)
	// The endpoints a controller would publish for the scheduler's pod: the
	// aggregation layer checks them before it calls the APIService available.
	c.publishEndpoints(inspectService.GetName())
	c.waitForAPIService(apiService.GetName())

	// Users: one may read everything, one only its namespace's groups and
	// queue, one nothing.
	viewer := c.inspectUser("viewer", &rbacv1.ClusterRoleBinding{})
	team := c.inspectUser("team-viewer", &rbacv1.RoleBinding{})
	nobody := c.inspectUser("nobody", nil)

	c.addNodes("node", 3, "4", "8Gi")
	startNodeSim(c, simOptions{})
	placed := groupPods("placed", 2, "4", time.Hour, 10*time.Minute)
	c.createPods(placed...)
	c.waitForPodPhase(time.Minute, corev1.PodRunning, names(placed)...)
	reserved := groupPods("reserved", 2, "4", time.Minute, 5*time.Minute)
	waiting := groupPods("waiting", 2, "3", time.Minute, 0)
	rejected := groupPods("rejected", 2, "8", time.Minute, 0)
	c.createPods(append(append(reserved, waiting...), rejected...)...)
	c.waitForEvent(time.Minute, "reserved-0", "FluenceGroupReserved", "reserved to start")
	c.waitForEvent(time.Minute, "rejected-0", "FluenceGroupRejected", "needs")
	c.waitForEvent(time.Minute, "waiting-0", "FluenceGroupWaiting", "waiting for resources")

	// Every command, through the API server.
	out := c.kubectlFluence(t, viewer, "groups")
	for _, row := range []string{"placed  *placed  *2 *2 *2 *2", "reserved  *queued  *2 *2 *0", "waiting  *queued", "rejected  *rejected"} {
		requireLine(t, "kubectl fluence groups", out, row)
	}
	var groups inspect.GroupList
	decodeJSON(t, c.kubectlFluence(t, viewer, "groups", "-A", "-o", "json"), &groups)
	started := map[string]*time.Time{}
	for _, g := range groups.Items {
		started[g.Name] = g.Started
	}
	if len(groups.Items) != 4 || started["placed"] == nil {
		t.Fatalf("groups -A -o json: %d groups, placed started %v; want 4 and a start", len(groups.Items), started["placed"])
	}
	requireLine(t, "kubectl fluence groups -o wide", c.kubectlFluence(t, viewer, "groups", "-o", "wide"), "placed .* label .* node-")

	out = c.kubectlFluence(t, viewer, "queue")
	requireLine(t, "kubectl fluence queue", out, "^1 +reserved +reserved .* in ")
	requireLine(t, "kubectl fluence queue", out, "^2 +waiting +pending ")

	out = c.kubectlFluence(t, viewer, "nodes")
	requireLine(t, "kubectl fluence nodes", out, "node-0 +Ready +4/4 .*fluence-test/placed\\(1\\)")
	requireLine(t, "kubectl fluence nodes", out, "node-2 +Ready +0/4")

	out = c.kubectlFluence(t, viewer, "graph")
	requireLine(t, "kubectl fluence graph", out, "node node-1: cpu 4, memory 8Gi, pods 110")

	out = c.kubectlFluence(t, viewer, "explain", "placed")
	requireLine(t, "explain placed", out, "State: +placed")
	requireLine(t, "explain placed", out, "is placed: 2 pods on node-")
	out = c.kubectlFluence(t, viewer, "explain", "reserved")
	requireLine(t, "explain reserved", out, "State: +reserved")
	requireLine(t, "explain reserved", out, "holds a reservation: the engine plans its start at")
	requireLine(t, "explain reserved", out, "That is when fluence-test/placed ends as planned")
	requireLine(t, "explain reserved", out, "cpu +8 +4 +4 +4")
	var e inspect.Explanation
	decodeJSON(t, c.kubectlFluence(t, viewer, "explain", "reserved", "-o", "json"), &e)
	if want := started["placed"].Add(10 * time.Minute); e.ExpectedStart == nil || e.ExpectedStart.Sub(want).Abs() > time.Second {
		t.Errorf("reserved is expected to start at %v, want placed's planned end %v", e.ExpectedStart, want)
	}
	out = c.kubectlFluence(t, viewer, "explain", "waiting")
	requireLine(t, "explain waiting", out, "State: +waiting")
	requireLine(t, "explain waiting", out, "at position 2 of 2 in the queue; it has no planned start yet")
	requireLine(t, "explain waiting", out, "Ahead of it: fluence-test/reserved")
	out = c.kubectlFluence(t, viewer, "explain", "rejected")
	requireLine(t, "explain rejected", out, "State: +rejected")
	requireLine(t, "explain rejected", out, "can never be placed as it is")
	requireLine(t, "explain rejected", out, "at most 8000m each; the cluster's 3 nodes have 12000m, at most 4000m on one")

	// The same answers straight from the scheduler's port, with the same
	// credentials.
	direct := c.kubectlFluence(t, viewer, "queue", "--scheduler-url", schedulerURL, "--scheduler-insecure-skip-tls-verify")
	requireLine(t, "kubectl fluence queue --scheduler-url", direct, "^1 +reserved +reserved .* in ")

	// A namespace's viewer sees that namespace, not the cluster.
	requireLine(t, "groups as team-viewer", c.kubectlFluence(t, team, "groups"), "reserved +queued")
	for _, cmd := range [][]string{{"groups", "-A"}, {"nodes"}, {"graph"}} {
		if _, err := c.kubectlFluenceErr(team, cmd...); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("kubectl fluence %v as team-viewer: %v, want forbidden", cmd, err)
		}
	}

	// Refusals: a user without rights, through the API server and at the
	// scheduler's port (which asks the API server itself); no credentials;
	// front-proxy headers without the front-proxy certificate.
	for _, extra := range [][]string{nil, {"--scheduler-url", schedulerURL, "--scheduler-insecure-skip-tls-verify"}} {
		_, err := c.kubectlFluenceErr(nobody, append([]string{"groups"}, extra...)...)
		t.Logf("kubectl fluence groups %v as nobody: %v", extra, err)
		if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), `"system:serviceaccount:`+releaseNamespace+`:nobody"`) {
			t.Errorf("kubectl fluence groups %v as nobody: %v, want forbidden for nobody", extra, err)
		}
	}
	groupsPath := inspect.Path(inspect.ResourceGroups, c.NS, "", "")
	for _, tc := range []struct {
		name    string
		headers map[string]string
	}{
		{"no credentials", nil},
		{"front-proxy headers without the front-proxy certificate", map[string]string{"X-Remote-User": "system:admin", "X-Remote-Group": "system:masters"}},
	} {
		code, body := rawGet(t, schedulerURL+groupsPath, tc.headers)
		t.Logf("%s at the scheduler's port: %d %s", tc.name, code, strings.TrimSpace(body))
		if code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("%s at the scheduler's port: %d %s, want 401 or 403", tc.name, code, body)
		}
		if strings.Contains(body, `"kind":"GroupList"`) {
			t.Errorf("%s: the scheduler answered with its groups", tc.name)
		}
	}
	anonymous := unauthenticatedStatus(t, c, groupsPath)
	t.Logf("no credentials at the API server: %d", anonymous)
	if anonymous != http.StatusUnauthorized && anonymous != http.StatusForbidden {
		t.Errorf("the API server answered a request without credentials with %d, want 401 or 403", anonymous)
	}

	// The service proxy: the API server authenticates the caller, then
	// calls the scheduler without the caller's credentials or name, so the
	// scheduler sees an anonymous request and refuses even the cluster's
	// admin. (Endpoints for it must be a pod's address other than loopback.)
	if ip := hostAddress(); ip == "" {
		t.Logf("the service proxy is not tried: this machine has no address but loopback")
	} else {
		c.proxiedService(ip, ports[0])
		// The API server's proxy reads EndpointSlices from its own informer:
		// until that has seen the slice, it answers 503 "no endpoints".
		var code int
		var err error
		_ = wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			err = c.Client.CoreV1().RESTClient().Get().Namespace(releaseNamespace).Resource("services").Name("https:fluence-proxied:https").
				SubResource("proxy").Suffix(groupsPath).Do(ctx).StatusCode(&code).Error()
			return code != http.StatusServiceUnavailable || err == nil || !strings.Contains(err.Error(), "no endpoints available"), nil
		})
		t.Logf("through the service proxy, as the cluster's admin: %d %v", code, err)
		if code != http.StatusForbidden || err == nil || !strings.Contains(err.Error(), `User "system:anonymous"`) {
			t.Errorf("through the service proxy, as the cluster's admin: %d %v, want the scheduler to refuse system:anonymous", code, err)
		}
		checkServiceProxyRoute(t, c, inspectService.GetName(), ip, ports[0], viewer, team, nobody)
	}

	if refused := countLines(proc.logs.String(), "is forbidden"); refused > 0 {
		t.Errorf("the API server refused the chart's service account %d times:\n%s", refused, tail(proc.logs.String(), 20))
	}
}

// waitReady waits until the scheduler's /readyz answers 200: it listens and
// its informers are synced.
func waitReady(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	var code int
	var body string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, body = httpsGet(t, base+"/readyz", "")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("the scheduler is not ready within a minute: %d %s", code, body)
	}
}

// serviceAt resolves one Service to one URL, for the API server's
// aggregation layer.
type serviceAt struct{ namespace, name, url string }

func (s serviceAt) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if namespace != s.namespace || name != s.name {
		return nil, fmt.Errorf("no service %s/%s here", namespace, name)
	}
	return url.Parse(s.url)
}

// publishEndpoints writes the EndpointSlice the endpoint-slice controller
// would write for the scheduler's pod behind the Service (its address is
// not dialled here; serviceAt is).
func (c *cluster) publishEndpoints(service string) {
	c.t.Helper()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: service + "-1", Namespace: releaseNamespace, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](10259), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := c.Client.DiscoveryV1().EndpointSlices(releaseNamespace).Create(c.Ctx, slice, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// waitForAPIService waits until the aggregation layer calls the
// APIService available: it reached the scheduler's discovery path.
func (c *cluster) waitForAPIService(name string) {
	c.t.Helper()
	client := aggregatorclient.NewForConfigOrDie(c.Config).ApiregistrationV1().APIServices()
	var last string
	err := wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		svc, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, cond := range svc.Status.Conditions {
			if cond.Type == apiregistrationv1.Available {
				last = string(cond.Status) + ": " + cond.Message
				return cond.Status == apiregistrationv1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("APIService %s not available within a minute: %s", name, last)
	}
}

// inspectUser makes a service account, bound to the chart's inspection
// ClusterRole by the kind of binding given (a RoleBinding in the test
// namespace, a ClusterRoleBinding, or nil for none), and returns a
// kubeconfig with its token once the API server's authorizer agrees.
func (c *cluster) inspectUser(name string, binding any) string {
	c.t.Helper()
	if _, err := c.Client.CoreV1().ServiceAccounts(releaseNamespace).Create(c.Ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	role := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: releaseName + "-inspect"}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: releaseNamespace}}
	var err error
	switch binding.(type) {
	case *rbacv1.ClusterRoleBinding:
		_, err = c.Client.RbacV1().ClusterRoleBindings().Create(c.Ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: role, Subjects: subjects}, metav1.CreateOptions{})
	case *rbacv1.RoleBinding:
		_, err = c.Client.RbacV1().RoleBindings(c.NS).Create(c.Ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: role, Subjects: subjects}, metav1.CreateOptions{})
	}
	if err != nil {
		c.t.Fatal(err)
	}
	if binding != nil {
		user := "system:serviceaccount:" + releaseNamespace + ":" + name
		err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Group: inspect.GroupName, Resource: inspect.ResourceGroups, Namespace: c.NS}}}
			got, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			return err == nil && got.Status.Allowed, nil
		})
		if err != nil {
			c.t.Fatalf("%s was not allowed to list inspection groups within 30 s", user)
		}
	}
	return c.kubeconfigWithToken(c.serviceAccountToken(releaseNamespace, name))
}

// kubectlFluence runs kubectl fluence in this process with the kubeconfig
// and returns what it printed, failing the test on an error.
func (c *cluster) kubectlFluence(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := c.kubectlFluenceErr(kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl fluence %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("$ kubectl fluence %s\n%s", strings.Join(args, " "), out)
	return out
}

func (c *cluster) kubectlFluenceErr(kubeconfig string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := kubectlfluence.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := cmd.ExecuteContext(c.Ctx)
	return out.String(), err
}

// requireLine fails the test unless a line of out matches the pattern.
func requireLine(t *testing.T, what, out, pattern string) {
	t.Helper()
	if !matchLine(out, pattern) {
		t.Errorf("%s: no line matches %q in:\n%s", what, pattern, out)
	}
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decoding %T: %v\n%s", v, err, s)
	}
}

// rawGet sends one GET without credentials (and with the headers) to the
// scheduler's port.
func rawGet(t *testing.T, url string, headers map[string]string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// unauthenticatedStatus asks the API server for the path without credentials and
// returns its status.
func unauthenticatedStatus(t *testing.T, c *cluster, path string) int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(c.Config.Host + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// hostAddress returns an IPv4 address of this machine that an Endpoints
// object may name (not loopback, not link-local), or "".
func hostAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// proxiedService makes a Service whose one endpoint is the scheduler's
// port on this machine, as a pod's: the API server proxies only to
// addresses of pods in the Service's namespace.
func (c *cluster) proxiedService(ip string, port int) {
	c.t.Helper()
	pods := c.Client.CoreV1().Pods(releaseNamespace)
	pod, err := pods.Create(c.Ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "scheduler-stand-in"},
		Spec:       corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	if _, err := pods.UpdateStatus(c.Ctx, pod, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Services(releaseNamespace).Create(c.Ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "fluence-proxied"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	// The service proxy of Kubernetes 1.37 reads EndpointSlices (1.36 read
	// Endpoints).
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "fluence-proxied", Labels: map[string]string{discoveryv1.LabelServiceName: "fluence-proxied"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: releaseNamespace, Name: pod.Name}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port))}},
	}
	if _, err := c.Client.DiscoveryV1().EndpointSlices(releaseNamespace).Create(c.Ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatal(err)
	}
}

func countLines(s, substr string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// matchLine reports whether a line of s matches the regular expression.
func matchLine(s, pattern string) bool {
	re := regexp.MustCompile(pattern)
	for _, l := range strings.Split(s, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// checkServiceProxyRoute: kubectl fluence through the API server's Service
// proxy to the chart's inspection Service (the route without an
// APIService), against the live replica behind it. The token kubectl
// fluence forwards is authenticated by the scheduler, so each user sees
// what the same rights show through the APIService; the API server
// refuses the proxy to whoever lacks the chart's proxy Role.
func checkServiceProxyRoute(t *testing.T, c *cluster, service, ip string, port int, viewer, team, nobody string) {
	t.Helper()
	c.proxiedEndpoints(service, ip, port)
	for _, sa := range []string{"viewer", "team-viewer"} {
		c.bindProxyRole(sa)
	}
	proxy := []string{"--route", "service-proxy"}
	var out string
	err := wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		// Until the API server's informer has the slice: 503 no endpoints.
		var err error
		out, err = c.kubectlFluenceErr(viewer, append([]string{"groups", "-A"}, proxy...)...)
		return err == nil, nil
	})
	if err != nil {
		_, err := c.kubectlFluenceErr(viewer, append([]string{"groups", "-A"}, proxy...)...)
		t.Fatalf("kubectl fluence groups -A through the Service proxy: %v", err)
	}
	t.Logf("$ kubectl fluence groups -A --route service-proxy\n%s", out)
	for _, row := range []string{"placed  *placed", "reserved  *queued", "rejected  *rejected"} {
		requireLine(t, "groups -A through the Service proxy", out, row)
	}
	requireLine(t, "queue through the Service proxy", c.kubectlFluence(t, viewer, append([]string{"queue"}, proxy...)...), "^1 +reserved +reserved .* in ")
	requireLine(t, "explain through the Service proxy", c.kubectlFluence(t, viewer, append([]string{"explain", "reserved"}, proxy...)...), "holds a reservation")
	requireLine(t, "nodes through the Service proxy", c.kubectlFluence(t, viewer, append([]string{"nodes"}, proxy...)...), "node-0 +Ready")
	// The scheduler sees the caller: a namespace's viewer sees its
	// namespace and is refused the cluster.
	requireLine(t, "groups as team-viewer through the Service proxy", c.kubectlFluence(t, team, append([]string{"groups"}, proxy...)...), "reserved +queued")
	if _, err := c.kubectlFluenceErr(team, append([]string{"groups", "-A"}, proxy...)...); err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "team-viewer") {
		t.Errorf("groups -A as team-viewer through the Service proxy: %v, want the scheduler to refuse team-viewer", err)
	}
	// Without the proxy Role the API server refuses.
	_, err = c.kubectlFluenceErr(nobody, append([]string{"groups"}, proxy...)...)
	t.Logf("kubectl fluence groups --route service-proxy as nobody: %v", err)
	if err == nil || !strings.Contains(err.Error(), "services/proxy") || !strings.Contains(err.Error(), "inspect-proxy") {
		t.Errorf("groups as nobody through the Service proxy: %v, want the API server's refusal of services/proxy, with the Role named", err)
	}
	// The default route finds the APIService here; --route auto through an
	// APIService that is there answers the same.
	requireLine(t, "groups (auto)", c.kubectlFluence(t, viewer, "groups"), "reserved +queued")
}

// proxiedEndpoints publishes the EndpointSlice of the service whose one
// endpoint is the scheduler's port on this machine, as its pod's (a
// stand-in pod with that address): the API server proxies only to pods'
// addresses.
func (c *cluster) proxiedEndpoints(service, ip string, port int) {
	c.t.Helper()
	pods := c.Client.CoreV1().Pods(releaseNamespace)
	pod, err := pods.Create(c.Ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: service + "-stand-in"},
		Spec:       corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	if _, err := pods.UpdateStatus(c.Ctx, pod, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: service + "-proxied", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: releaseNamespace, Name: pod.Name}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port))}},
	}
	if _, err := c.Client.DiscoveryV1().EndpointSlices(releaseNamespace).Create(c.Ctx, slice, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// bindProxyRole binds the release namespace's service account to the
// chart's Role for the Service proxy, and waits until the API server's
// authorizer agrees.
func (c *cluster) bindProxyRole(sa string) {
	c.t.Helper()
	role := releaseName + "-inspect-proxy"
	if _, err := c.Client.RbacV1().RoleBindings(releaseNamespace).Create(c.Ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa + "-proxy"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: releaseNamespace}},
	}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	user := "system:serviceaccount:" + releaseNamespace + ":" + sa
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "services", Subresource: "proxy", Namespace: releaseNamespace, Name: "https:" + releaseName + "-inspect:https"}}}
		got, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, nil
	})
	if err != nil {
		c.t.Fatalf("%s was not allowed the Service proxy within 30 s", user)
	}
}
