package schedserver

import (
	"net/http"
	goruntime "runtime"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/apiserver/pkg/server/statusz"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/prometheus/slis"
	zpagesfeatures "k8s.io/component-base/zpages/features"
	kubeschedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/metrics/resources"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// componentName names the server in its logs and z-pages.
const componentName = "fluence-scheduler"

// endpointsConfig is what the secure port's endpoints are built from.
type endpointsConfig struct {
	config     *kubeschedulerconfig.KubeSchedulerConfiguration
	informers  informers.SharedInformerFactory
	leading    func() bool
	health     []healthz.HealthChecker
	ready      []healthz.HealthChecker
	flags      flagz.Reader
	inspectors *plugin.Inspectors
}

// endpoints is kube-scheduler's set of endpoints plus the inspection API.
func endpoints(c endpointsConfig) http.Handler {
	m := mux.NewPathRecorderMux(componentName)
	healthz.InstallHandler(m, c.health...)
	healthz.InstallLivezHandler(m)
	healthz.InstallReadyzHandler(m, c.ready...)
	configz.InstallHandler(m)
	m.Handle("/metrics", legacyregistry.HandlerWithReset())
	// Pod resource metrics describe what the scheduler places: only the
	// leader's are worth scraping.
	podResources := resources.Handler(c.informers.Core().V1().Pods().Lister())
	m.HandleFunc("/metrics/resources", func(w http.ResponseWriter, r *http.Request) {
		if c.leading() {
			podResources.ServeHTTP(w, r)
		}
	})
	slis.SLIMetricsWithReset{}.Install(m)
	if c.config.EnableProfiling {
		routes.Profiling{}.Install(m)
		if c.config.EnableContentionProfiling {
			goruntime.SetBlockProfileRate(1)
		}
		routes.DebugFlags{}.Install(m, "v", routes.StringFlagPutHandler(logs.GlogSetter))
	}
	if utilfeature.DefaultFeatureGate.Enabled(zpagesfeatures.ComponentFlagz) && c.flags != nil {
		flagz.Install(m, componentName, c.flags)
	}
	api := c.inspectors.Handler(c.leading)
	m.Handle(inspect.PathPrefix, api)
	m.HandlePrefix(inspect.PathPrefix+"/", api)
	if utilfeature.DefaultFeatureGate.Enabled(zpagesfeatures.ComponentStatusz) {
		statusz.Install(m, componentName, statusz.NewRegistry(compatibility.DefaultBuildEffectiveVersion(), statusz.WithListedPaths(m.ListedPaths())))
	}
	return m
}

// secure wraps the endpoints in the filters of kube-scheduler's secure
// port. Request info knows the API prefixes: the inspection API is
// authorized by its resources, as the API server authorizes it.
func secure(h http.Handler, authn authenticator.Request, authz authorizer.Authorizer) http.Handler {
	info := &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	h = genericapifilters.WithAuthorization(h, authz, scheme.Codecs)
	h = genericapifilters.WithAuthentication(h, forwardedToken(authn), genericapifilters.Unauthorized(scheme.Codecs), nil, nil)
	h = genericapifilters.WithRequestInfo(h, info)
	h = genericapifilters.WithCacheControl(h)
	h = genericfilters.WithHTTPLogging(h)
	return genericfilters.WithPanicRecovery(h, info)
}

// forwardedToken lets a request for the inspection API that came through
// the API server's Service proxy, which strips the caller's credentials,
// be authenticated by the bearer token kubectl fluence sent in
// inspect.ForwardedAuthorization, exactly as that token in the
// Authorization header would be (a TokenReview). Other paths, and
// requests with an Authorization header, are authenticated as before.
func forwardedToken(authn authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		fwd := r.Header.Get(inspect.ForwardedAuthorization)
		if fwd == "" || r.Header.Get("Authorization") != "" || (r.URL.Path != inspect.PathPrefix && !strings.HasPrefix(r.URL.Path, inspect.PathPrefix+"/")) {
			return authn.AuthenticateRequest(r)
		}
		c := r.Clone(r.Context())
		c.Header.Del(inspect.ForwardedAuthorization)
		c.Header.Set("Authorization", fwd)
		return authn.AuthenticateRequest(c)
	})
}
