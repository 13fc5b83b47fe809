package schedserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	kubeschedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// The secure port's chain with stand-in authentication (a header names the
// user) and authorization (viewer may list inspection groups; everyone may
// read /healthz): requests reach the inspection API only authenticated and
// authorized, and are authorized by the API's resources as the API server
// authorizes them, while kube-scheduler's paths stay non-resource URLs.
func TestSecurePort(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]authorizer.Attributes{}
	authn := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		name := r.Header.Get("X-Test-User")
		if name == "" {
			return nil, false, nil
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
	})
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		mu.Lock()
		seen[a.GetUser().GetName()+" "+a.GetPath()] = a
		mu.Unlock()
		switch {
		case !a.IsResourceRequest() && a.GetPath() == "/healthz":
			return authorizer.DecisionAllow, "", nil
		case a.GetUser().GetName() == "viewer" && a.IsResourceRequest() && a.GetAPIGroup() == inspect.GroupName && a.GetResource() == inspect.ResourceGroups:
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "not allowed", nil
	})
	informerFactory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	h := secure(endpoints(endpointsConfig{
		config: &kubeschedulerconfig.KubeSchedulerConfiguration{}, informers: informerFactory,
		leading: func() bool { return true }, inspectors: plugin.NewInspectors(),
	}), authn, authz)

	groups := inspect.Path(inspect.ResourceGroups, "team", "", "")
	for _, tc := range []struct {
		user, path string
		code       int
		body       string
	}{
		{"", groups, http.StatusUnauthorized, "Unauthorized"},
		{"nobody", groups, http.StatusForbidden, "forbidden"},
		{"viewer", groups, http.StatusServiceUnavailable, "runs no fluence profile"}, // reached the API: this test registers no plugin
		{"viewer", inspect.Path(inspect.ResourceNodes, "", "", ""), http.StatusForbidden, "forbidden"},
		{"viewer", "/metrics", http.StatusForbidden, "forbidden"},
		{"nobody", "/healthz", http.StatusOK, "ok"},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.user != "" {
			req.Header.Set("X-Test-User", tc.user)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s GET %s: %d %s, want %d with %q", tc.user, tc.path, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
	a := seen["viewer "+groups]
	if a == nil || !a.IsResourceRequest() || a.GetVerb() != "list" || a.GetNamespace() != "team" || a.GetAPIGroup() != inspect.GroupName || a.GetAPIVersion() != inspect.Version {
		t.Errorf("the inspection API was authorized as %+v, want list groups.%s in namespace team", a, inspect.GroupName)
	}
	if m := seen["viewer /metrics"]; m == nil || m.IsResourceRequest() || m.GetVerb() != "get" {
		t.Errorf("/metrics was authorized as %+v, want get on the non-resource URL", m)
	}
}
