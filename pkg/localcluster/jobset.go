package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Names JobSet's own deployment gives its objects (config/default of its
// module: the prefix jobset-, the namespace jobset-system). Its manager
// signs its serving certificate for the Service's name in the namespace
// it runs in, which outside a pod is jobset-system, and injects the CA
// into the two webhook configurations by these names.
const (
	JobSetNamespace        = "jobset-system"
	jobSetWebhookService   = "jobset-webhook-service"
	jobSetWebhookSecret    = "jobset-webhook-server-cert"
	jobSetMutatingConfig   = "jobset-mutating-webhook-configuration"
	jobSetValidatingConfig = "jobset-validating-webhook-configuration"
)

// JobSet v0.10's certificate rotation (pkg/util/cert) lets the manager
// set up its controllers and webhooks once tls.crt exists in a fixed
// directory, jobSetRotatorCertDir, which in a pod is the mounted Secret;
// its webhook server reads the certificate from the certDir of its
// configuration. Here the fixed path is a symlink through
// /proc/self/cwd into the certDir of whichever JobSet manager looks (each
// runs in its own Dir): the check then waits, as in a pod, until
// mountSecret has copied that manager's certificate, and managers of
// other local clusters on this machine share the path without sharing
// certificates.
const (
	jobSetRotatorCertDir = "/tmp/k8s-webhook-server/serving-certs"
	jobSetCertDir        = "jobset-certs" // in JobSetOptions.Dir
	jobSetRotatorLink    = "/proc/self/cwd/" + jobSetCertDir + "/tls.crt"
)

// JobSetOptions say how to run JobSet.
type JobSetOptions struct {
	// Dir holds JobSet's configuration, its serving certificates and its
	// log (jobset.log); it must exist.
	Dir string
	// Kubeconfig is a kubeconfig file for the cluster, which JobSet uses.
	Kubeconfig string
}

// StartJobSet builds JobSet's manager from sigs.k8s.io/jobset (the main
// package at the module's root, the version third_party/jobset/go.mod
// requires) and runs it as a process of its own against the cluster cfg
// reaches, on 127.0.0.1 as Kueue is run (StartKueue):
//
//   - its CRD (config/components/crd/bases) is installed first, without the
//     conversion webhook its kustomization patches in: the CRD serves one
//     version, so the API server never calls it;
//   - its webhooks run: the configurations of config/components/webhook,
//     named and patched as its kustomization does (the pod webhooks see
//     only pods labelled with a JobSet's name), call the Service
//     jobset-system/jobset-webhook-service, an ExternalName Service for
//     localhost on the port JobSet serves them on. JobSet makes its own
//     CA and serving certificate (the Secret jobset-webhook-server-cert)
//     and injects the CA into the configurations;
//   - leader election and the metrics server are off.
//
// It returns once the webhooks answer: a server-side dry run of a JobSet
// comes back with the defaults JobSet's webhook sets. The process stops
// when ctx ends.
func StartJobSet(ctx context.Context, cfg *rest.Config, opts JobSetOptions) (*Process, error) {
	// JobSet runs in opts.Dir (jobSetRotatorLink), where relative paths
	// would mean something else.
	var err error
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, err
	}
	if opts.Kubeconfig, err = filepath.Abs(opts.Kubeconfig); err != nil {
		return nil, err
	}
	w, err := prepareWebhookNeighbour(ctx, cfg, JobSet)
	if err != nil {
		return nil, err
	}
	b, webhookPort, healthPort, client := w.built, w.webhookPort, w.healthPort, w.client
	crds, err := readCRDs(b.Dir, "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml")
	if err != nil {
		return nil, fmt.Errorf("JobSet's CRD in %s: %w", b.Dir, err)
	}
	if err := installCRDs(ctx, cfg, crds); err != nil {
		return nil, err
	}
	if err := webhookService(ctx, client, JobSetNamespace, jobSetWebhookService, jobSetWebhookSecret, int32(webhookPort)); err != nil {
		return nil, err
	}
	if err := installJobSetWebhooks(ctx, client, b.Dir, int32(webhookPort)); err != nil {
		return nil, err
	}
	if err := linkRotatorCert(); err != nil {
		return nil, err
	}

	certDir := filepath.Join(opts.Dir, jobSetCertDir)
	config := map[string]any{
		"apiVersion":     "config.jobset.x-k8s.io/v1alpha1",
		"kind":           "Configuration",
		"health":         map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)},
		"metrics":        map[string]any{"bindAddress": "0"},
		"webhook":        map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir},
		"leaderElection": map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{
			"enable": true, "webhookServiceName": jobSetWebhookService, "webhookSecretName": jobSetWebhookSecret,
		},
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(opts.Dir, "jobset-config.yaml")
	if err := os.WriteFile(configPath, data, 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	go mountSecret(ctx, client, JobSetNamespace, jobSetWebhookSecret, certDir)
	p, err := startProcess(ctx, JobSet, b.Bin, opts.Dir, filepath.Join(opts.Dir, "jobset.log"), []string{"KUBECONFIG=" + opts.Kubeconfig},
		"--config", configPath, "--kubeconfig", opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		p.Stop()
		return nil, err
	}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	err = p.waitUntil(ctx, 3*time.Minute, func(ctx context.Context) error {
		if err := httpOK(ctx, readyz); err != nil {
			return err
		}
		return jobSetDefaults(ctx, dyn)
	})
	if err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// installJobSetWebhooks creates the webhook configurations of JobSet's
// module as its kustomization makes them: named jobset-<name>, calling
// jobset-system/jobset-webhook-service (here on port), with the webhooks
// its patches replace (config/components/webhook/patches: the pod
// webhooks, limited to JobSet's pods) replaced.
func installJobSetWebhooks(ctx context.Context, client kubernetes.Interface, dir string, port int32) error {
	webhookDir := filepath.Join(dir, "config/components/webhook")
	mutating, validating, err := readWebhookConfigs(filepath.Join(webhookDir, "manifests.yaml"))
	if err != nil {
		return err
	}
	if err := replaceWebhooks(filepath.Join(webhookDir, "patches/mutating-patch.yaml"), mutating.Webhooks); err != nil {
		return err
	}
	if err := replaceWebhooks(filepath.Join(webhookDir, "patches/validating-patch.yaml"), validating.Webhooks); err != nil {
		return err
	}
	call := webhookCaller(JobSetNamespace, jobSetWebhookService, port)
	mutating.Name = jobSetMutatingConfig
	for i := range mutating.Webhooks {
		call(&mutating.Webhooks[i].ClientConfig)
	}
	validating.Name = jobSetValidatingConfig
	for i := range validating.Webhooks {
		call(&validating.Webhooks[i].ClientConfig)
	}
	if err := createOrReplace(ctx, client.AdmissionregistrationV1().MutatingWebhookConfigurations(), mutating); err != nil {
		return fmt.Errorf("installing %s: %w", mutating.Name, err)
	}
	if err := createOrReplace(ctx, client.AdmissionregistrationV1().ValidatingWebhookConfigurations(), validating); err != nil {
		return fmt.Errorf("installing %s: %w", validating.Name, err)
	}
	return nil
}

// replaceWebhooks applies a kustomization's JSON patch of the form JobSet
// uses, operations "replace" on /webhooks/<index>, to webhooks (of either
// kind). Any other operation is refused, so that a later release's
// patches are not half applied.
func replaceWebhooks[W admissionregistrationv1.MutatingWebhook | admissionregistrationv1.ValidatingWebhook](path string, webhooks []W) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value W      `json:"value"`
	}
	if err := yaml.Unmarshal(b, &ops); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, op := range ops {
		index, ok := strings.CutPrefix(op.Path, "/webhooks/")
		i, err := strconv.Atoi(index)
		if op.Op != "replace" || !ok || err != nil || i < 0 || i >= len(webhooks) {
			return fmt.Errorf("%s: %s %s: only replacing one of the %d webhooks is understood", path, op.Op, op.Path, len(webhooks))
		}
		webhooks[i] = op.Value
	}
	return nil
}

// linkRotatorCert makes jobSetRotatorCertDir/tls.crt the symlink
// jobSetRotatorLink, unless it is already.
func linkRotatorCert() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("JobSet's certificate rotation waits for %s/tls.crt, which fluence makes a symlink through /proc (Linux only)", jobSetRotatorCertDir)
	}
	path := filepath.Join(jobSetRotatorCertDir, "tls.crt")
	if err := os.MkdirAll(jobSetRotatorCertDir, 0o755); err != nil {
		return fmt.Errorf("JobSet's certificate rotation waits for %s: %w", path, err)
	}
	err := os.Symlink(jobSetRotatorLink, path)
	if err == nil || !errors.Is(err, os.ErrExist) {
		return err
	}
	if target, _ := os.Readlink(path); target != jobSetRotatorLink {
		return fmt.Errorf("JobSet's certificate rotation waits for %s, which is there and not the symlink to %s that lets local clusters share it; remove it", path, jobSetRotatorLink)
	}
	return nil
}

// JobSetResource is the resource of JobSet's v1alpha2 JobSets.
var JobSetResource = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// jobSetDefaults is nil once JobSet's defaulting webhook answers: a
// server-side dry run of a JobSet whose pod template names no restart
// policy comes back with OnFailure, which neither the CRD's schema nor the
// API server sets.
func jobSetDefaults(ctx context.Context, dyn dynamic.Interface) error {
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2",
		"kind":       "JobSet",
		"metadata":   map[string]any{"name": "fluence-jobset-probe", "namespace": metav1.NamespaceDefault},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "probe",
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"}},
			}}}},
		}}},
	}}
	got, err := dyn.Resource(JobSetResource).Namespace(metav1.NamespaceDefault).Create(ctx, js, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return fmt.Errorf("a dry-run JobSet: %w", err)
	}
	rjs, _, _ := unstructured.NestedSlice(got.Object, "spec", "replicatedJobs")
	if len(rjs) == 1 {
		if rj, ok := rjs[0].(map[string]any); ok {
			if policy, _, _ := unstructured.NestedString(rj, "template", "spec", "template", "spec", "restartPolicy"); policy == "OnFailure" {
				return nil
			}
		}
	}
	return errors.New("a dry-run JobSet came back without the restart policy JobSet's webhook defaults")
}
