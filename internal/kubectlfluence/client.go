package kubectlfluence

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// The routes through the API server to the inspection API.
const (
	// RouteAuto asks through the APIService and, when the API server has
	// none or it is unavailable, through the Service proxy.
	RouteAuto = "auto"
	// RouteAPIService asks /apis/inspect.fluence.flux-framework.org/...,
	// which the chart's APIService (inspect.apiService) forwards.
	RouteAPIService = "apiservice"
	// RouteServiceProxy asks the API server's proxy to the chart's
	// inspection Service: /api/v1/namespaces/NS/services/https:NAME:https/proxy/...
	RouteServiceProxy = "service-proxy"
)

// endpoint is where the inspection API is asked and how.
type endpoint struct {
	// SchedulerURL, when set, is the scheduler's secure port, asked
	// directly; otherwise the API server is, by Route.
	SchedulerURL string
	Route        string
	// Namespace and Service name the chart's inspection Service (the
	// release's namespace, <release>-inspect), for the Service proxy.
	Namespace, Service string
	// CAFile verifies the scheduler's certificate; Insecure skips that
	// (kube-scheduler's default certificate is self-signed).
	CAFile   string
	Insecure bool
	Profile  string
	// Attempts and Pause bound the retries of an answer from a standby
	// replica (503): the next request may reach the leader.
	Attempts int
	Pause    time.Duration
}

// client asks the inspection API.
type client struct {
	rest rest.Interface
	// proxy asks through the Service proxy: the same credentials, and the
	// bearer token also in inspect.ForwardedAuthorization. nil when the
	// route cannot be the Service proxy.
	proxy rest.Interface
	ep    endpoint
	// via is the route the last answer came by: RouteAPIService or
	// RouteServiceProxy ("" directly). RouteAuto settles on the first
	// that answers.
	via string
}

// newClient returns a client for the kubeconfig's cluster and credentials,
// or for the scheduler with the same credentials.
func newClient(cfg *rest.Config, ep endpoint) (*client, error) {
	cfg = rest.CopyConfig(cfg)
	if ep.SchedulerURL != "" {
		// The API server's CA did not sign the scheduler's certificate.
		cfg.Host, cfg.APIPath = ep.SchedulerURL, ""
		cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.ServerName = nil, ep.CAFile, ""
		cfg.TLSClientConfig.Insecure = ep.Insecure
		if ep.Insecure && ep.CAFile != "" {
			return nil, fmt.Errorf("--scheduler-ca-file and --scheduler-insecure-skip-tls-verify exclude each other")
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if ep.Attempts < 1 {
		ep.Attempts = 1
	}
	c := &client{rest: cs.Discovery().RESTClient(), ep: ep}
	if ep.SchedulerURL != "" {
		return c, nil
	}
	switch ep.Route {
	case "", RouteAuto:
		c.ep.Route = RouteAuto
	case RouteAPIService:
		c.via = RouteAPIService
		return c, nil
	case RouteServiceProxy:
		c.via = RouteServiceProxy
	default:
		return nil, fmt.Errorf("unknown route %q: use %s, %s or %s", ep.Route, RouteAuto, RouteAPIService, RouteServiceProxy)
	}
	if ep.Namespace == "" || ep.Service == "" {
		return nil, fmt.Errorf("the Service proxy needs the inspection Service's namespace and name (--fluence-namespace, --fluence-service)")
	}
	pcfg := rest.CopyConfig(cfg)
	pcfg.Wrap(forwardToken)
	pcs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return nil, err
	}
	c.proxy = pcs.Discovery().RESTClient()
	return c, nil
}

// forwardToken copies the bearer token the kubeconfig's credentials put
// in Authorization (a token, a token file, an exec plugin) into
// inspect.ForwardedAuthorization: the API server's Service proxy drops
// the former and passes the latter to the scheduler, which authenticates
// it. A client certificate cannot be forwarded.
func forwardToken(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if auth := req.Header.Get("Authorization"); strings.HasPrefix(auth, "Bearer ") {
			req = req.Clone(req.Context())
			req.Header.Set(inspect.ForwardedAuthorization, auth)
		}
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// get reads one answer into out. In RouteAuto it asks through the
// APIService first and, when the API server says it serves no such API or
// cannot reach it (not the scheduler saying so), through the Service
// proxy, which it then keeps for the command's other requests.
func (c *client) get(ctx context.Context, resource, namespace, name string, out any) error {
	path := inspect.Path(resource, namespace, name, "")
	if c.ep.Route == RouteAuto && c.via == "" {
		c.via = RouteAPIService
		err := c.getVia(ctx, path, out)
		if err == nil || !fallBack(err) {
			return c.explainError(err)
		}
		c.via = RouteServiceProxy
		if perr := c.getVia(ctx, path, out); perr != nil {
			first := "the API server does not serve " + inspect.APIVersion + " (no APIService)"
			if code := err.(apierrors.APIStatus).Status().Code; code == http.StatusServiceUnavailable {
				first = "the API server cannot reach the APIService " + inspect.Version + "." + inspect.GroupName
			}
			return fmt.Errorf("%w\n(%s, so kubectl fluence asked through the Service proxy)", c.explainError(perr), first)
		}
		return nil
	}
	return c.explainError(c.getVia(ctx, path, out))
}

// fallBack reports whether the API server (not the scheduler) answered
// that it serves no inspection API or cannot reach the APIService's
// scheduler: what it answers without the chart's APIService, or with it
// while no replica is ready.
func fallBack(err error) bool {
	st, ok := err.(apierrors.APIStatus)
	if !ok || isStatusFromScheduler(err) {
		return false
	}
	code := st.Status().Code
	return code == http.StatusNotFound || code == http.StatusServiceUnavailable
}

// getVia reads one answer by the route settled on, retrying a standby's
// 503.
func (c *client) getVia(ctx context.Context, path string, out any) error {
	rc := c.rest
	if c.via == RouteServiceProxy {
		rc = c.proxy
		path = inspect.ServiceProxyPath(c.ep.Namespace, c.ep.Service, "https", path)
	}
	var body []byte
	var err error
	for attempt := 1; ; attempt++ {
		req := rc.Get().AbsPath(path)
		if c.ep.Profile != "" {
			req = req.Param(inspect.ProfileParam, c.ep.Profile)
		}
		res := req.Do(ctx)
		if body, err = res.Raw(); err != nil {
			err = res.Error() // the Status the server sent, when it sent one
		}
		if err == nil || attempt >= c.ep.Attempts || !apierrors.IsServiceUnavailable(err) || !isStatusFromScheduler(err) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.ep.Pause):
		}
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("reading the scheduler's answer for %s: %w", path, err)
	}
	return nil
}

// explainError says what a refusal means for the route taken.
func (c *client) explainError(err error) error {
	if err == nil {
		return nil
	}
	where := "the API server"
	if c.ep.SchedulerURL != "" {
		where = "the scheduler at " + c.ep.SchedulerURL
	}
	var code int32
	if st, ok := err.(apierrors.APIStatus); ok {
		code = st.Status().Code
	}
	fromScheduler := isStatusFromScheduler(err)
	svc := c.ep.Namespace + "/" + c.ep.Service
	switch {
	case c.via == RouteServiceProxy && !fromScheduler && code == http.StatusNotFound:
		return fmt.Errorf("%w\n(no inspection Service %s: give the release's namespace and Service with --fluence-namespace and --fluence-service, or $%s and $%s)", err, svc, EnvNamespace, EnvService)
	case c.via == RouteServiceProxy && !fromScheduler && code == http.StatusServiceUnavailable:
		return fmt.Errorf("%w\n(no ready fluence replica behind %s: kubectl -n %s get pods)", err, svc, c.ep.Namespace)
	case c.via == RouteServiceProxy && !fromScheduler && code == http.StatusForbidden:
		return fmt.Errorf("%w\n(the API server refused you the Service proxy to %s: the chart's Role <release>-inspect-proxy in %s grants get on services/proxy for it)", err, svc, c.ep.Namespace)
	case c.via == RouteServiceProxy && fromScheduler && code == http.StatusForbidden && strings.Contains(err.Error(), `"system:anonymous"`):
		return fmt.Errorf("%w\n(through the Service proxy the scheduler knows you only by a bearer token, which your kubeconfig does not present (a client certificate?): use a token, the chart's APIService (inspect.apiService) or --scheduler-url)", err)
	case code == http.StatusNotFound && c.ep.SchedulerURL == "" && !fromScheduler:
		return fmt.Errorf("%w\n(the API server does not serve %s: is the fluence chart installed with inspect.apiService, or use --route %s or --scheduler-url)", err, inspect.APIVersion, RouteServiceProxy)
	case code == http.StatusServiceUnavailable && c.ep.SchedulerURL == "" && !fromScheduler:
		return fmt.Errorf("%w\n(the API server cannot reach the fluence scheduler: kubectl get apiservice %s.%s)", err, inspect.Version, inspect.GroupName)
	case code == http.StatusUnauthorized:
		return fmt.Errorf("%w\n(%s did not accept your kubeconfig's credentials)", err, where)
	case code == http.StatusForbidden:
		return fmt.Errorf("%w\n(%s refused you: you need get/list on %s in group %s; the chart's ClusterRole <release>-inspect grants them)", err, where, "groups, queue, nodes or graph", inspect.GroupName)
	}
	return err
}

// isStatusFromScheduler reports whether the scheduler's inspection API
// wrote the error, not the API server.
func isStatusFromScheduler(err error) bool {
	st, ok := err.(apierrors.APIStatus)
	return ok && strings.HasPrefix(st.Status().Message, inspect.MessagePrefix)
}
