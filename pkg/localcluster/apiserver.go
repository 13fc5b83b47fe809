package localcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/features"
	netutils "k8s.io/utils/net"
)

// DefaultDisabledAdmission are the admission plugins a local cluster turns
// off, as Kubernetes' own integration tests do: with no token controller,
// ServiceAccount admission would refuse every pod; no node lifecycle
// controller runs to taint or untaint nodes; and pods with a
// priorityClassName keep their class's priority only if Priority runs,
// which it does unless a caller lists it here.
var DefaultDisabledAdmission = []string{"ServiceAccount", "TaintNodesByCondition", "StorageObjectInUseProtection"}

// apiServer is a running in-process kube-apiserver.
type apiServer struct {
	config *rest.Config // system:masters over HTTPS, CA pinned, no rate limit
	done   chan error   // receives Run's result, then is closed
}

// startAPIServer builds kube-apiserver's options as its command line would
// (flags are kube-apiserver flags), with the serving certificate, the
// service-account key and everything else it writes under dir, storage in
// etcd under prefix, and serving on a free 127.0.0.1 port. It returns once
// /healthz answers and the system namespaces exist, or with an error (and,
// once the server was started, the server, to be waited for).
func startAPIServer(ctx context.Context, dir, etcdURL, prefix string, disabledAdmission, flags []string) (*apiServer, error) {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}
	saKey, err := writeServiceAccountKey(filepath.Join(pki, "sa.key"))
	if err != nil {
		return nil, err
	}

	s := options.NewServerRunOptions()
	// A registry of its own: the default one may be set only once per
	// process, and a process may start several clusters in turn.
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := compatibility.DefaultKubeEffectiveVersionForTest()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return nil, err
	}
	s.GenericServerRunOptions.ComponentGlobalsRegistry = registry

	listener, port, err := genericoptions.CreateListener("tcp", "127.0.0.1:0", net.ListenConfig{})
	if err != nil {
		return nil, err
	}
	running := false
	defer func() {
		if !running { // Run owns the listener once started
			listener.Close()
		}
	}()
	s.SecureServing.Listener = listener
	s.SecureServing.BindPort = port
	s.SecureServing.BindAddress = netutils.ParseIPSloppy("127.0.0.1")
	s.SecureServing.ExternalAddress = netutils.ParseIPSloppy("127.0.0.1")
	s.SecureServing.ServerCert.CertDirectory = pki
	s.ServiceClusterIPRanges = "10.0.0.0/16"
	s.Etcd.StorageConfig.Transport.ServerList = []string{etcdURL}
	s.Etcd.StorageConfig.Prefix = prefix
	s.ServiceAccountSigningKeyFile = saKey
	s.Authentication.ServiceAccounts.Issuers = []string{"https://kubernetes.default.svc"}
	s.Authentication.ServiceAccounts.KeyFiles = []string{saKey}
	s.Authentication.APIAudiences = []string{"https://kubernetes.default.svc"}
	s.Authorization.Modes = []string{"Node", "RBAC"}
	s.Admission.GenericAdmission.DisablePlugins = disabledAdmission
	if err := configureFrontProxy(s, pki); err != nil {
		return nil, err
	}
	if err := configureClientCA(s, pki); err != nil {
		return nil, err
	}
	// As Kubernetes' own integration tests: the endpoints of the
	// "kubernetes" Service would be 127.0.0.1, which Endpoints refuse, and
	// the reconciler would log that error every 10 s.
	s.EndpointReconcilerType = "none"

	runtimeConfig := cliflag.ConfigurationMap{}
	if utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		runtimeConfig["scheduling.k8s.io/v1beta1"] = "true"
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.CompositePodGroup) {
		runtimeConfig["scheduling.k8s.io/v1alpha3"] = "true" // compositepodgroups
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		runtimeConfig["resource.k8s.io/v1"] = "true"
	}
	if len(runtimeConfig) > 0 {
		s.APIEnablement.RuntimeConfig = runtimeConfig
	}

	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(flags); err != nil {
		return nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if fs.Changed("feature-gates") {
		// They would reach the API server but not the schedulers and
		// controllers in this process.
		return nil, fmt.Errorf("kube-apiserver flags: give feature gates as Options.FeatureGates, not --feature-gates")
	}
	if err := registry.Set(); err != nil {
		return nil, err
	}

	completed, err := s.Complete(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return nil, fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		return nil, err
	}
	// /version names the release (version.go), in each server of the chain.
	for _, g := range []*genericapiserver.Config{config.KubeAPIs.ControlPlane.Generic, &config.ApiExtensions.GenericConfig.Config, &config.Aggregator.GenericConfig.Config} {
		g.EffectiveVersion = stampRelease(g.EffectiveVersion)
	}
	completedConfig, err := config.Complete()
	if err != nil {
		return nil, err
	}
	server, err := app.CreateServerChain(completedConfig)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}

	a := &apiServer{done: make(chan error, 1)}
	running = true
	go func() {
		defer close(a.done)
		a.done <- prepared.Run(ctx)
	}()

	// Clients outside the process verify the self-signed serving
	// certificate written to pki, not the in-memory loopback one.
	cfg := rest.CopyConfig(server.GenericAPIServer.LoopbackClientConfig)
	caData, err := os.ReadFile(filepath.Join(pki, "apiserver.crt"))
	if err != nil {
		return a, fmt.Errorf("kube-apiserver serving certificate: %w", err)
	}
	cfg.TLSClientConfig = rest.TLSClientConfig{CAData: caData}
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the server is ours
	cfg.ContentType, cfg.AcceptContentTypes = "", ""
	a.config = cfg

	// On error a is returned too: it runs until ctx ends, and the caller's
	// Stop waits for it.
	return a, a.waitReady(ctx)
}

// waitReady polls /healthz and the namespaces the API server's bootstrap
// controller creates.
func (a *apiServer) waitReady(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(a.config)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-a.done:
			if err == nil {
				err = errors.New("stopped")
			}
			return false, fmt.Errorf("kube-apiserver: %w", err)
		default:
		}
		status := 0
		result := client.Discovery().RESTClient().Get().AbsPath("/healthz").Do(ctx).StatusCode(&status)
		if status != http.StatusOK {
			last = fmt.Errorf("/healthz: %d %v", status, result.Error())
			return false, nil
		}
		for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
			if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				last = err
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("kube-apiserver not ready: %w (last: %v)", err, last)
	}
	return err
}

// writeServiceAccountKey writes a fresh P-256 key for signing service
// account tokens and returns its path.
func writeServiceAccountKey(path string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	return path, os.WriteFile(path, data, 0o600)
}
