// Command mpi-operator runs the MPI Operator's v2 controller
// (github.com/kubeflow/mpi-operator/pkg/controller, v2beta1 MPIJobs) from
// its published module, for fluence's local cluster.
//
// The operator's own command (cmd/mpi-operator) serves its health check on
// the fixed port :8080 on every interface and runs leader election in the
// namespace mpi-operator; two local clusters on one machine (or anything
// else on port 8080) would make it exit. This command builds the same
// controller with the same clients and informers, without leader election,
// and serves /healthz on the address --healthz-address gives (127.0.0.1
// and a port the caller chose). It takes the operator's flags that matter
// here: --kubeConfig, --namespace, --gang-scheduling, --threadiness,
// --kube-api-qps and --kube-api-burst.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog"
	schedclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	volcanoclient "volcano.sh/apis/pkg/client/clientset/versioned"

	mpijobclientset "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned"
	kubeflowscheme "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned/scheme"
	informers "github.com/kubeflow/mpi-operator/pkg/client/informers/externalversions"
	"github.com/kubeflow/mpi-operator/pkg/controller"
)

func main() {
	kubeconfig := flag.String("kubeConfig", "", "path to the kubeconfig")
	namespace := flag.String("namespace", "", "the namespace whose MPIJobs to run; all when empty")
	gang := flag.String("gang-scheduling", "", `gang scheduling: "volcano", or a scheduler's name for scheduler-plugins PodGroups; none when empty`)
	threadiness := flag.Int("threadiness", 2, "workers")
	qps := flag.Int("kube-api-qps", 5, "client QPS")
	burst := flag.Int("kube-api-burst", 10, "client burst")
	healthz := flag.String("healthz-address", "127.0.0.1:0", "where to serve /healthz")
	klog.InitFlags(flag.CommandLine)
	_ = flag.Set("logtostderr", "true") // klog v1 writes files under /tmp otherwise
	flag.Parse()
	if err := run(*kubeconfig, *namespace, *gang, *healthz, *threadiness, *qps, *burst); err != nil {
		fmt.Fprintln(os.Stderr, "mpi-operator:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, gang, healthz string, threadiness, qps, burst int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	kubeClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "mpi-operator"))
	if err != nil {
		return err
	}
	mpiClient, err := mpijobclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var (
		volcano volcanoclient.Interface
		sched   schedclientset.Interface
	)
	switch gang {
	case "":
	case "volcano":
		if volcano, err = volcanoclient.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "volcano")); err != nil {
			return err
		}
	default:
		if sched, err = schedclientset.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "scheduler-plugins")); err != nil {
			return err
		}
	}
	// Events about MPIJobs need their kinds in the scheme.
	if err := kubeflowscheme.AddToScheme(clientgoscheme.Scheme); err != nil {
		return err
	}

	var kubeOpts []kubeinformers.SharedInformerOption
	var mpiOpts []informers.SharedInformerOption
	if namespace != "" {
		kubeOpts = append(kubeOpts, kubeinformers.WithNamespace(namespace))
		mpiOpts = append(mpiOpts, informers.WithNamespace(namespace))
	}
	kubeInformers := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeOpts...)
	mpiInformers := informers.NewSharedInformerFactoryWithOptions(mpiClient, 0, mpiOpts...)
	c, err := controller.NewMPIJobController(kubeClient, mpiClient, volcano, sched,
		kubeInformers.Core().V1().ConfigMaps(),
		kubeInformers.Core().V1().Secrets(),
		kubeInformers.Core().V1().Services(),
		kubeInformers.Batch().V1().Jobs(),
		kubeInformers.Core().V1().Pods(),
		kubeInformers.Scheduling().V1().PriorityClasses(),
		mpiInformers.Kubeflow().V2beta1().MPIJobs(),
		namespace, gang)
	if err != nil {
		return err
	}
	kubeInformers.Start(ctx.Done())
	mpiInformers.Start(ctx.Done())
	if c.PodGroupCtrl != nil {
		c.PodGroupCtrl.StartInformerFactory(ctx.Done())
	}
	// /healthz answers once the informers have synced.
	kubeInformers.WaitForCacheSync(ctx.Done())
	mpiInformers.WaitForCacheSync(ctx.Done())
	if ctx.Err() != nil {
		return nil
	}

	ln, err := net.Listen("tcp", healthz)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	go func() { _ = http.Serve(ln, mux) }()
	klog.Infof("healthz: http://%s/healthz", ln.Addr())

	// Run waits for the informers to sync, then runs the workers until
	// the channel closes.
	return c.Run(threadiness, ctx.Done())
}
