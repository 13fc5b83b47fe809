package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// webhookStart is what starting a neighbour with webhooks needs first: its
// binary, a port for its webhooks and one for its health checks, and a
// client for the objects that let the API server reach it.
type webhookStart struct {
	built                   Built
	webhookPort, healthPort int
	client                  kubernetes.Interface
}

// prepareWebhookNeighbour builds the named neighbour and picks its ports.
func prepareWebhookNeighbour(ctx context.Context, cfg *rest.Config, name string) (webhookStart, error) {
	var w webhookStart
	var err error
	if w.built, err = BuildNeighbour(ctx, name); err != nil {
		return w, err
	}
	if w.webhookPort, err = freePort(); err != nil {
		return w, err
	}
	if w.healthPort, err = freePort(); err != nil {
		return w, err
	}
	w.client, err = kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "fluence-"+name+"-setup"))
	return w, err
}

// webhookService makes what a neighbour's webhooks are reached through
// here, where the neighbour is a process on 127.0.0.1 and not a pod: its
// namespace, the empty Secret its internal certificate management fills,
// and the Service its webhook configurations name, of type ExternalName
// for localhost on port. The API server resolves an ExternalName Service
// to that name and so dials 127.0.0.1, while it still checks the serving
// certificate against the Service's DNS name, the name the neighbour's
// certificate management signs.
func webhookService(ctx context.Context, client kubernetes.Interface, namespace, service, secret string, port int32) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the namespace %s: %w", namespace, err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secret}}
	if _, err := client.CoreV1().Secrets(namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the Secret %s/%s: %w", namespace, secret, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: service},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}},
		},
	}
	services := client.CoreV1().Services(namespace)
	if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		old, err := services.Get(ctx, service, metav1.GetOptions{})
		if err != nil {
			return err
		}
		old.Spec = svc.Spec
		if _, err := services.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the Service %s/%s: %w", namespace, service, err)
		}
	} else if err != nil {
		return fmt.Errorf("creating the Service %s/%s: %w", namespace, service, err)
	}
	return nil
}

// readWebhookConfigs reads the one mutating and the one validating webhook
// configuration of a controller-gen manifests file (a module's
// config/components/webhook/manifests.yaml), as generated: before its
// kustomization names them and points them at a Service.
func readWebhookConfigs(path string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			if mutating != nil {
				return nil, nil, fmt.Errorf("%s: two mutating webhook configurations", path)
			}
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.Unmarshal(doc, mutating)
		case "ValidatingWebhookConfiguration":
			if validating != nil {
				return nil, nil, fmt.Errorf("%s: two validating webhook configurations", path)
			}
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.Unmarshal(doc, validating)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, fmt.Errorf("%s: want a mutating and a validating webhook configuration", path)
	}
	return mutating, validating, nil
}

// webhookCaller returns a function that points a webhook's client at
// namespace/service on port, keeping the path the manifests give it.
func webhookCaller(namespace, service string, port int32) func(*admissionregistrationv1.WebhookClientConfig) {
	return func(cc *admissionregistrationv1.WebhookClientConfig) {
		var path *string
		if cc.Service != nil {
			path = cc.Service.Path
		}
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: service, Path: path, Port: &port}
	}
}
