package up

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// InstallCRD creates the CustomResourceDefinition in manifest and waits
// until the API server has established it, so that objects of its kind can
// be created as soon as this returns.
func InstallCRD(ctx context.Context, cfg *rest.Config, manifest string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(manifest), crd); err != nil {
		return fmt.Errorf("decoding the CRD: %w", err)
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
	}
	return nil
}
