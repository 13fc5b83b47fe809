package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Names Kueue's own deployment gives its objects (config/default of its
// module: the prefix kueue-, the namespace kueue-system).
const (
	KueueNamespace      = "kueue-system"
	kueueWebhookService = "kueue-webhook-service"
	kueueWebhookSecret  = "kueue-webhook-server-cert"
	// KueueQueueLabel names a workload's LocalQueue.
	KueueQueueLabel = "kueue.x-k8s.io/queue-name"
)

// DefaultKueueFrameworks are the integrations StartKueue enables: Jobs,
// MPIJobs (once their CRD is served) and plain pods.
var DefaultKueueFrameworks = []string{"batch/job", "kubeflow.org/mpijob", "pod"}

// KueueOptions say how to run Kueue.
type KueueOptions struct {
	// Dir holds Kueue's configuration, its serving certificates and its
	// log (kueue.log); it must exist.
	Dir string
	// Kubeconfig is a kubeconfig file for the cluster, which Kueue uses.
	Kubeconfig string
	// Frameworks are Kueue's integrations; nil is DefaultKueueFrameworks.
	Frameworks []string
}

// StartKueue builds Kueue's manager from sigs.k8s.io/kueue (the version
// third_party/kueue/go.mod requires) and runs it as a process of its own
// against the cluster cfg reaches, as Kueue's own manifests deploy it, on
// 127.0.0.1:
//
//   - its CRDs (config/components/crd of the module, with the conversion
//     webhooks its kustomization adds) are installed first;
//   - its webhooks run: the configurations of config/components/webhook,
//     named and scoped as its kustomization names them (kueue-…, not in the
//     namespaces kube-system and kueue-system), call the Service
//     kueue-system/kueue-webhook-service, which here is an ExternalName
//     Service for localhost on the port Kueue serves them on. Kueue makes
//     its own CA and serving certificate for that Service's name (its
//     internal certificate management, in the Secret
//     kueue-webhook-server-cert) and writes the CA into the
//     configurations, as in a cluster;
//   - leader election, the metrics server and the visibility API server
//     (which would bind fixed ports on every interface) are off.
//
// It returns once the webhooks answer: a server-side dry run of a Job with
// the queue label comes back suspended. The process stops when ctx ends.
func StartKueue(ctx context.Context, cfg *rest.Config, opts KueueOptions) (*Process, error) {
	w, err := prepareWebhookNeighbour(ctx, cfg, Kueue)
	if err != nil {
		return nil, err
	}
	b, webhookPort, healthPort, client := w.built, w.webhookPort, w.healthPort, w.client

	crds, err := kueueCRDs(b.Dir, int32(webhookPort))
	if err != nil {
		return nil, fmt.Errorf("Kueue's CRDs in %s: %w", b.Dir, err)
	}
	if err := installCRDs(ctx, cfg, crds); err != nil {
		return nil, err
	}
	if err := webhookService(ctx, client, KueueNamespace, kueueWebhookService, kueueWebhookSecret, int32(webhookPort)); err != nil {
		return nil, err
	}
	if err := installKueueWebhooks(ctx, client, b.Dir, int32(webhookPort)); err != nil {
		return nil, err
	}

	certDir := filepath.Join(opts.Dir, "kueue-certs")
	frameworks := opts.Frameworks
	if frameworks == nil {
		frameworks = DefaultKueueFrameworks
	}
	config := map[string]any{
		"apiVersion": "config.kueue.x-k8s.io/v1beta2",
		"kind":       "Configuration",
		"namespace":  KueueNamespace,
		"health":     map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)},
		"metrics":    map[string]any{"bindAddress": "0"},
		"webhook": map[string]any{
			"host": "127.0.0.1", "port": webhookPort, "certDir": certDir,
		},
		"leaderElection": map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{
			"enable": true, "webhookServiceName": kueueWebhookService, "webhookSecretName": kueueWebhookSecret,
		},
		"integrations": map[string]any{"frameworks": frameworks},
		"featureGates": map[string]bool{"VisibilityOnDemand": false},
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(opts.Dir, "kueue-config.yaml")
	if err := os.WriteFile(configPath, data, 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	go mountSecret(ctx, client, KueueNamespace, kueueWebhookSecret, certDir)
	p, err := startProcess(ctx, Kueue, b.Bin, "", filepath.Join(opts.Dir, "kueue.log"), []string{"KUBECONFIG=" + opts.Kubeconfig},
		"--config", configPath, "--kubeconfig", opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	err = p.waitUntil(ctx, 3*time.Minute, func(ctx context.Context) error {
		if err := httpOK(ctx, readyz); err != nil {
			return err
		}
		return kueueSuspendsJobs(ctx, client)
	})
	if err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// kueueCRDs reads Kueue's CRDs from its module and adds the conversion
// webhooks of its kustomization's patches, calling the webhook Service on
// port.
func kueueCRDs(dir string, port int32) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	const crdDir = "config/components/crd"
	bases, err := filepath.Glob(filepath.Join(dir, crdDir, "bases", "*.yaml"))
	if err != nil || len(bases) == 0 {
		return nil, fmt.Errorf("no CRDs in %s/bases", crdDir)
	}
	for i := range bases {
		bases[i], _ = filepath.Rel(dir, bases[i])
	}
	crds, err := readCRDs(dir, bases...)
	if err != nil {
		return nil, err
	}
	patches, err := filepath.Glob(filepath.Join(dir, crdDir, "patches", "webhook_in_*.yaml"))
	if err != nil {
		return nil, err
	}
	// Only the patches the kustomization lists (it leaves some commented out).
	kust, err := os.ReadFile(filepath.Join(dir, crdDir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	conversions := map[string]*apiextensionsv1.CustomResourceConversion{}
	for _, path := range patches {
		if !bytes.Contains(kust, []byte("\n- path: patches/"+filepath.Base(path))) {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		patch := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, patch); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		conv := patch.Spec.Conversion
		if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
			return nil, fmt.Errorf("%s: no conversion webhook Service", path)
		}
		conv.Webhook.ClientConfig.Service = kueueService(conv.Webhook.ClientConfig.Service.Path, port)
		conversions[patch.Name] = conv
	}
	for _, crd := range crds {
		if conv, ok := conversions[crd.Name]; ok {
			crd.Spec.Conversion = conv
			delete(conversions, crd.Name)
		}
	}
	if len(conversions) > 0 {
		return nil, fmt.Errorf("conversion patches for CRDs the module does not have: %v", conversions)
	}
	return crds, nil
}

func kueueService(path *string, port int32) *apiextensionsv1.ServiceReference {
	return &apiextensionsv1.ServiceReference{Namespace: KueueNamespace, Name: kueueWebhookService, Path: path, Port: ptr.To(port)}
}

// installKueueWebhooks creates the webhook configurations of Kueue's
// module (config/components/webhook/manifests.yaml) as its kustomization
// makes them: named kueue-<name>, calling kueue-system/
// kueue-webhook-service (here on port), and leaving out the namespaces
// kube-system and kueue-system (its kustomization does so for the pod,
// Deployment and StatefulSet webhooks; nothing of Kueue's kinds lives in
// them here, so every webhook leaves them out).
func installKueueWebhooks(ctx context.Context, client kubernetes.Interface, dir string, port int32) error {
	mutating, validating, err := readWebhookConfigs(filepath.Join(dir, "config/components/webhook/manifests.yaml"))
	if err != nil {
		return err
	}
	call := webhookCaller(KueueNamespace, kueueWebhookService, port)
	notSystem := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem, KueueNamespace},
	}}}
	mutating.Name = "kueue-" + mutating.Name
	for i := range mutating.Webhooks {
		call(&mutating.Webhooks[i].ClientConfig)
		mutating.Webhooks[i].NamespaceSelector = notSystem
	}
	validating.Name = "kueue-" + validating.Name
	for i := range validating.Webhooks {
		call(&validating.Webhooks[i].ClientConfig)
		validating.Webhooks[i].NamespaceSelector = notSystem
	}
	if err := createOrReplace(ctx, client.AdmissionregistrationV1().MutatingWebhookConfigurations(), mutating); err != nil {
		return fmt.Errorf("installing %s: %w", mutating.Name, err)
	}
	if err := createOrReplace(ctx, client.AdmissionregistrationV1().ValidatingWebhookConfigurations(), validating); err != nil {
		return fmt.Errorf("installing %s: %w", validating.Name, err)
	}
	return nil
}

// mountSecret does for a process on this machine what the kubelet does for
// a pod that mounts the Secret as a volume: it writes each key of the
// Secret to a file of that name in dir, and again whenever the Secret
// changes (polled twice a second), until ctx ends. Kueue's certificate
// management writes its serving certificate to the Secret and waits for
// it to appear in its certificate directory.
func mountSecret(ctx context.Context, client kubernetes.Interface, namespace, name, dir string) {
	written := ""
	for ctx.Err() == nil {
		secret, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && secret.ResourceVersion != written {
			ok := true
			for key, data := range secret.Data {
				tmp := filepath.Join(dir, "."+key+".tmp")
				if os.WriteFile(tmp, data, 0o600) != nil || os.Rename(tmp, filepath.Join(dir, key)) != nil {
					ok = false
				}
			}
			if ok {
				written = secret.ResourceVersion
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// kueueSuspendsJobs is nil once Kueue's Job webhook suspends a Job with the
// queue label (a server-side dry run in the namespace default).
func kueueSuspendsJobs(ctx context.Context, client kubernetes.Interface) error {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "fluence-kueue-probe", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{KueueQueueLabel: "fluence-probe"}},
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(false),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			}},
		},
	}
	got, err := client.BatchV1().Jobs(metav1.NamespaceDefault).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return fmt.Errorf("a dry-run Job: %w", err)
	}
	if got.Spec.Suspend == nil || !*got.Spec.Suspend {
		return errors.New("a dry-run Job with the queue label was not suspended")
	}
	return nil
}

// httpOK is nil when GET url answers 200.
func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
