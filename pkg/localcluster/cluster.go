package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options describe a local cluster. The zero value is an API server with
// its own etcd and nothing else.
type Options struct {
	// Dir is the work directory; "" makes a fresh one under the system's
	// temporary directory. Stop removes it either way.
	Dir string
	// EtcdURL names a running etcd to share (the integration suite runs
	// one per test binary); each cluster then stores its objects under a
	// prefix of its own. "" starts an embedded etcd in Dir.
	EtcdURL string
	// FeatureGates are set for the API server and for whatever else this
	// process runs (schedulers, the Job controller) until the next Start.
	// With GenericWorkload on, scheduling.k8s.io/v1beta1 is served.
	FeatureGates map[string]bool
	// DisabledAdmission lists admission plugins to turn off; nil is
	// DefaultDisabledAdmission.
	DisabledAdmission []string
	// APIServerFlags are further kube-apiserver flags.
	APIServerFlags []string
	// JobController runs the Job controller.
	JobController bool
	// ClaimController runs the ResourceClaim controller, which makes
	// pods' claims from their ResourceClaimTemplates.
	ClaimController bool
	// GarbageCollector runs the garbage collector and the namespace
	// controller: deleting an owner (a Job) deletes what it owns (its
	// pods), and deleting a namespace deletes what is in it.
	GarbageCollector bool
	// NodeSim runs the node simulator with these options; nil runs none.
	NodeSim *NodeSimOptions
	// Nodes are created before Start returns.
	Nodes []NodeSpec
	// Namespace, when set, is created before Start returns.
	Namespace string
}

// Cluster is a running local control plane.
type Cluster struct {
	// Dir is the private work directory.
	Dir string
	// Config reaches the API server as system:masters (HTTPS, CA pinned)
	// with no client-side rate limit.
	Config *rest.Config
	Client kubernetes.Interface
	// NodeSim is the node simulator, nil unless Options.NodeSim was set.
	NodeSim *NodeSim

	cancel  context.CancelFunc
	etcd    *Etcd
	api     *apiServer
	workers sync.WaitGroup // controllers and the node simulator
	ownDir  bool

	mu         sync.Mutex
	schedulers []*Scheduler
	neighbours []*Process
	stopOnce   sync.Once
}

// Start brings up a cluster. On error, everything it started is stopped
// and its directory removed.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if err := setGates(opts.FeatureGates); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: opts.Dir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "fluence-cluster-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	} else if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	ctx, c.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	etcdURL, prefix := opts.EtcdURL, "/registry"
	if etcdURL == "" {
		if c.etcd, err = StartEtcd(filepath.Join(c.Dir, "etcd")); err != nil {
			return nil, err
		}
		etcdURL = c.etcd.URL
	} else {
		// A prefix of its own: clusters sharing an etcd never see each
		// other's objects.
		prefix = "/" + randomHex(8) + "/registry"
	}
	disabled := opts.DisabledAdmission
	if disabled == nil {
		disabled = DefaultDisabledAdmission
	}
	if c.api, err = startAPIServer(ctx, c.Dir, etcdURL, prefix, disabled, opts.APIServerFlags); err != nil {
		return nil, err
	}
	c.Config = c.api.config
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}

	if opts.Namespace != "" {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace}}
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating namespace %s: %w", opts.Namespace, err)
		}
	}
	for _, n := range opts.Nodes {
		if _, err := c.AddNode(ctx, n); err != nil {
			return nil, err
		}
	}
	if opts.JobController {
		if err := startJobController(ctx, c.Config, &c.workers); err != nil {
			return nil, err
		}
	}
	if opts.ClaimController {
		if err := startClaimController(ctx, c.Config, &c.workers); err != nil {
			return nil, err
		}
	}
	if opts.GarbageCollector {
		if err := startCleanupControllers(ctx, c.Config, &c.workers); err != nil {
			return nil, err
		}
	}
	if opts.NodeSim != nil {
		client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(c.Config), "node-simulator"))
		if err != nil {
			return nil, err
		}
		simCtx, simCancel := context.WithCancel(ctx)
		if c.NodeSim, err = StartNodeSim(simCtx, client, *opts.NodeSim); err != nil {
			simCancel()
			return nil, err
		}
		c.workers.Go(func() { <-simCtx.Done(); simCancel() })
	}
	return c, nil
}

// track registers a scheduler for Stop.
func (c *Cluster) track(s *Scheduler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.schedulers = append(c.schedulers, s)
}

// Stop stops the neighbours (StartKueue), the schedulers, the
// controllers, the node simulator, the API server and etcd, in that
// order, waits for each, and removes the work directory. It is
// idempotent.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		scheds, neighbours := c.schedulers, c.neighbours
		c.mu.Unlock()
		for _, p := range neighbours {
			p.Stop()
		}
		for _, s := range scheds {
			s.Stop()
		}
		if c.cancel != nil {
			c.cancel()
		}
		c.workers.Wait()
		if c.api != nil {
			<-c.api.done
		}
		if c.etcd != nil {
			c.etcd.Close()
		}
		if c.Dir != "" {
			os.RemoveAll(c.Dir)
		}
	})
}

// Done is closed when the API server has stopped (after Stop, or when it
// failed on its own); Err then says why.
func (c *Cluster) Done() <-chan error { return c.api.done }

// Kubeconfig returns a kubeconfig for the cluster as system:masters, with
// the given default namespace ("" for default).
func (c *Cluster) Kubeconfig(namespace string) clientcmdapi.Config {
	return c.kubeconfigFor(&clientcmdapi.AuthInfo{Token: c.Config.BearerToken}, namespace)
}

// KubeconfigWithToken is Kubeconfig presenting only token (a service
// account's, say).
func (c *Cluster) KubeconfigWithToken(token, namespace string) clientcmdapi.Config {
	return c.kubeconfigFor(&clientcmdapi.AuthInfo{Token: token}, namespace)
}

func (c *Cluster) kubeconfigFor(auth *clientcmdapi.AuthInfo, namespace string) clientcmdapi.Config {
	const name = "fluence-local"
	return clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{name: {
			Server:                   c.Config.Host,
			CertificateAuthorityData: c.Config.CAData,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{name: auth},
		Contexts: map[string]*clientcmdapi.Context{name: {
			Cluster: name, AuthInfo: name, Namespace: namespace,
		}},
		CurrentContext: name,
	}
}

// WriteKubeconfig writes a kubeconfig (mode 0600) to path; "" writes it to
// the work directory. It returns the path.
func (c *Cluster) WriteKubeconfig(path string, kc clientcmdapi.Config) (string, error) {
	if path == "" {
		path = filepath.Join(c.Dir, "kubeconfig")
	}
	if err := clientcmd.WriteToFile(kc, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return path, os.Chmod(path, 0o600)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(errors.New("crypto/rand failed")) // cannot happen on Linux
	}
	return hex.EncodeToString(b)
}
