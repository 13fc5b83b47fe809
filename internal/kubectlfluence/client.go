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

// endpoint is where the inspection API is asked and how.
type endpoint struct {
	// SchedulerURL, when set, is the scheduler's secure port, asked
	// directly; otherwise the API server is.
	SchedulerURL string
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
	ep   endpoint
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
	return &client{rest: cs.Discovery().RESTClient(), ep: ep}, nil
}

// get reads one answer into out.
func (c *client) get(ctx context.Context, resource, namespace, name string, out any) error {
	path := inspect.Path(resource, namespace, name, "")
	var body []byte
	var err error
	for attempt := 1; ; attempt++ {
		req := c.rest.Get().AbsPath(path)
		if c.ep.Profile != "" {
			req = req.Param(inspect.ProfileParam, c.ep.Profile)
		}
		res := req.Do(ctx)
		if body, err = res.Raw(); err != nil {
			err = res.Error() // the Status the server sent, when it sent one
		}
		if err == nil || attempt >= c.ep.Attempts || !apierrors.IsServiceUnavailable(err) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.ep.Pause):
		}
	}
	if err != nil {
		return c.explainError(err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("reading the scheduler's answer for %s: %w", path, err)
	}
	return nil
}

// explainError says what a refusal means for the route taken.
func (c *client) explainError(err error) error {
	where := "the API server"
	if c.ep.SchedulerURL != "" {
		where = "the scheduler at " + c.ep.SchedulerURL
	}
	var code int32
	if st, ok := err.(apierrors.APIStatus); ok {
		code = st.Status().Code
	}
	switch {
	case code == http.StatusNotFound && c.ep.SchedulerURL == "" && !isStatusFromScheduler(err):
		return fmt.Errorf("%w\n(the API server does not serve %s: is the fluence chart installed with inspect.enabled, or give --scheduler-url)", err, inspect.APIVersion)
	case code == http.StatusServiceUnavailable && c.ep.SchedulerURL == "" && !isStatusFromScheduler(err):
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
