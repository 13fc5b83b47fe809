package schedserver

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// matchAPIServer makes the scheduler speak its API server's release.
// kube-scheduler may not be newer than the API server: built on 1.37, it
// watches APIs a 1.36 server does not serve (DeviceTaintRules, GA in
// 1.37) and waits for their caches for ever, binding nothing. When the
// server is one minor release older, the scheduler emulates that release
// (--emulated-version), whose feature gates leave those APIs alone, and
// says so; a server older still is refused with the reason. A server that
// cannot be asked is left to kube-scheduler's own errors, and a user who
// set --emulated-version is taken at their word.
func matchAPIServer(fs *pflag.FlagSet, opts *options.Options, logger klog.Logger) error {
	if f := fs.Lookup("emulated-version"); f == nil || f.Changed {
		return nil
	}
	cfg, err := clientConfig(opts, logger)
	if err != nil {
		logger.Info("fluence: cannot tell the API server's release; running as this build's", "err", err)
		return nil
	}
	cfg.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		logger.Info("fluence: cannot tell the API server's release; running as this build's", "err", err)
		return nil
	}
	info, err := dc.ServerVersion()
	if err != nil {
		logger.Info("fluence: cannot tell the API server's release; running as this build's", "err", err)
		return nil
	}
	server, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		logger.Info("fluence: the API server's release is unreadable; running as this build's", "gitVersion", info.GitVersion, "err", err)
		return nil
	}
	binary := opts.ComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent).BinaryVersion()
	v, err := emulationFor(server, binary)
	if err != nil || v == "" {
		return err
	}
	logger.Info("fluence: the API server is one release older than this scheduler; emulating its release", "apiServer", info.GitVersion, "emulatedVersion", v)
	return fs.Set("emulated-version", v)
}

// emulationFor returns the release a scheduler of release binary must
// emulate to run against an API server of release server: "" for its own.
func emulationFor(server, binary *version.Version) (string, error) {
	switch {
	case server.Major() != binary.Major() || server.Minor() >= binary.Minor():
		return "", nil
	case server.Minor()+1 == binary.Minor():
		return fmt.Sprintf("%d.%d", server.Major(), server.Minor()), nil
	}
	return "", fmt.Errorf("the API server is Kubernetes %d.%d, more than one minor release older than this scheduler (Kubernetes %d.%d), which would watch APIs it does not serve: run a fluence built for the API server's release, or pass --emulated-version to try anyway",
		server.Major(), server.Minor(), binary.Major(), binary.Minor())
}

// clientConfig is the client configuration kube-scheduler will use: the
// config file's clientConnection.kubeconfig when --config is given, else
// --kubeconfig, else the in-cluster configuration; --master overrides the
// server.
func clientConfig(opts *options.Options, logger klog.Logger) (*rest.Config, error) {
	var kubeconfig string
	if opts.Deprecated != nil {
		kubeconfig = opts.Deprecated.Kubeconfig
	}
	if opts.ConfigFile != "" {
		cfg, err := options.LoadConfigFromFile(logger, opts.ConfigFile)
		if err != nil {
			return nil, err
		}
		kubeconfig = cfg.ClientConnection.Kubeconfig
	}
	return clientcmd.BuildConfigFromFlags(opts.Master, kubeconfig)
}
