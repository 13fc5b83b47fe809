package kubectlfluence

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// options are the flags every command shares.
type options struct {
	streams       genericiooptions.IOStreams
	config        *genericclioptions.ConfigFlags
	ep            endpoint
	allNamespaces bool
	output        string
}

// The environment variables that give --scheduler-url and
// --scheduler-ca-file their defaults: a shell set up once for a cluster
// without the chart's APIService (fluence up) runs the commands as written
// for one with it.
const (
	EnvSchedulerURL    = "FLUENCE_SCHEDULER_URL"
	EnvSchedulerCAFile = "FLUENCE_SCHEDULER_CA_FILE"
	// EnvNamespace and EnvService give the defaults of --fluence-namespace
	// and --fluence-service: where the chart's inspection Service is, for
	// a release installed under another name or namespace.
	EnvNamespace = "FLUENCE_NAMESPACE"
	EnvService   = "FLUENCE_SERVICE"
	// EnvRoute gives the default of --route.
	EnvRoute = "FLUENCE_ROUTE"
)

// The inspection Service of the chart installed as docs/install.md does
// (release fluence in namespace fluence-system).
const (
	DefaultNamespace = "fluence-system"
	DefaultService   = "fluence-inspect"
)

// envOr returns the environment variable's value, or def when it is unset
// or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// NewCommand returns `kubectl fluence` with its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{streams: streams, config: genericclioptions.NewConfigFlags(true), ep: endpoint{Attempts: 5, Pause: 500 * time.Millisecond}}
	cmd := &cobra.Command{
		Use: "kubectl-fluence",
		// kubectl runs the plugin as `kubectl fluence`: so does its help.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl fluence"},
		Short:       "Inspect the fluence scheduler: its groups, queue, nodes and graph, and why a group waits",
		Long: `Inspect the fluence scheduler: the pod groups it knows, its queue with
reservations, what is held on each node, its resource graph, and why a group
waits or was rejected and when it is expected to start.

It asks the API server, which forwards to the scheduler by one of two
routes (--route):

  apiservice     the chart's APIService (inspect.apiService, off by
                 default), which carries your identity to the scheduler;
  service-proxy  the API server's proxy to the chart's inspection Service
                 (--fluence-namespace, --fluence-service), which needs get
                 on services/proxy for that Service and carries your bearer
                 token to the scheduler in the header ` + inspect.ForwardedAuthorization + `
                 (a client certificate cannot be carried);
  auto           (the default) the APIService when the API server serves
                 it and can reach it, else the Service proxy.

--scheduler-url asks the scheduler's secure port directly instead. The
environment variables FLUENCE_SCHEDULER_URL and FLUENCE_SCHEDULER_CA_FILE
give the defaults of --scheduler-url and --scheduler-ca-file (fluence up
prints what to set); FLUENCE_ROUTE, FLUENCE_NAMESPACE and FLUENCE_SERVICE
those of --route, --fluence-namespace and --fluence-service. Every way the
scheduler checks who you are and that you may read the inspection API
(group ` + inspect.GroupName + `).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	flags := cmd.PersistentFlags()
	o.config.AddFlags(flags)
	flags.StringVar(&o.ep.Profile, "profile", "", "the fluence profile (its schedulerName) to inspect, when the scheduler runs several")
	flags.StringVar(&o.ep.SchedulerURL, "scheduler-url", os.Getenv(EnvSchedulerURL), "ask the scheduler's secure port at this URL (https://HOST:PORT) instead of the API server, with your kubeconfig's credentials (default $"+EnvSchedulerURL+")")
	flags.StringVar(&o.ep.CAFile, "scheduler-ca-file", os.Getenv(EnvSchedulerCAFile), "with --scheduler-url: the CA that signed the scheduler's serving certificate (default $"+EnvSchedulerCAFile+")")
	flags.StringVar(&o.ep.Route, "route", envOr(EnvRoute, RouteAuto), "how the API server reaches the scheduler: auto, apiservice or service-proxy (default $"+EnvRoute+", else auto)")
	flags.StringVar(&o.ep.Namespace, "fluence-namespace", envOr(EnvNamespace, DefaultNamespace), "the namespace of the fluence release, for the Service proxy (default $"+EnvNamespace+", else "+DefaultNamespace+")")
	flags.StringVar(&o.ep.Service, "fluence-service", envOr(EnvService, DefaultService), "the release's inspection Service, <release>-inspect, for the Service proxy (default $"+EnvService+", else "+DefaultService+")")
	flags.BoolVar(&o.ep.Insecure, "scheduler-insecure-skip-tls-verify", false, "with --scheduler-url: do not verify the scheduler's certificate (kube-scheduler's default one is self-signed); your credentials go to whoever answers")
	cmd.AddCommand(
		o.listCommand("groups", "List the pod groups fluence knows: state, size, placement, wait", true, o.groups),
		o.listCommand("queue", "List the waiting requests in the order the engine considers them, with reservations", true, o.queue),
		o.listCommand("nodes", "List the nodes: allocated and allocatable per resource, the groups on each and, with -o wide, their topology domains", false, o.nodes),
		o.listCommand("graph", "Show the resource graph the engine decides on", false, o.graph),
		o.explainCommand(),
	)
	return cmd
}

// listCommand builds a command without arguments; namespaced ones take
// -A.
func (o *options) listCommand(use, short string, namespaced bool, run func(ctx context.Context, c *client, namespace string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := o.prepare(namespaced)
			if err != nil {
				return err
			}
			return run(cmd.Context(), c, ns)
		},
	}
	if namespaced {
		cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the groups of every namespace")
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	return cmd
}

func (o *options) explainCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain GROUP",
		Short: "Say why a group waits or was rejected, in words and numbers, and when it is expected to start",
		Long: `Say why a group is where it is: what it asks more of than is free, where it
stands in the queue, the start the engine reserved for it and what frees the
resources by then, or why it can never be placed as it is.

GROUP is the group's name in the namespace: a labelled group's or PodGroup's
name, or a workload's (a Job's, a StatefulSet's...). When a name is used by
groups of several sources, give SOURCE:NAME (job:solver).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.prepare(true)
			if err != nil {
				return err
			}
			if ns == "" {
				return fmt.Errorf("explain needs a namespace: -n NAMESPACE, not -A")
			}
			return o.explain(cmd.Context(), c, ns, args[0])
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml")
	return cmd
}

// prepare checks the output format and returns the client and the
// namespace ("" for all).
func (o *options) prepare(namespaced bool) (*client, string, error) {
	switch o.output {
	case "", "wide", "json", "yaml":
	default:
		return nil, "", fmt.Errorf("unknown output format %q: use wide, json or yaml", o.output)
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	c, err := newClient(cfg, o.ep)
	if err != nil {
		return nil, "", err
	}
	if !namespaced || o.allNamespaces {
		return c, "", nil
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}
