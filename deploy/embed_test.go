package deploy

import (
	"os"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The shipped PodGroup CRD decodes strictly, describes every status field
// fluence writes, and shows the phase and the counts in `kubectl get
// podgroups`. (The integration tests install it on a real API server.)
func TestPodGroupCRD(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(PodGroupCRD), crd); err != nil {
		t.Fatal(err)
	}
	if crd.Name != "podgroups.scheduling.x-k8s.io" || len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
		t.Fatalf("CRD %s, versions %v: want podgroups.scheduling.x-k8s.io at v1alpha1", crd.Name, crd.Spec.Versions)
	}
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("no status subresource: fluence writes status through it")
	}
	schema := v.Schema.OpenAPIV3Schema
	status := schema.Properties["status"].Properties
	for field, typ := range map[string]string{
		"phase": "string", "occupiedBy": "string", "scheduleStartTime": "string",
		"scheduled": "integer", "running": "integer", "succeeded": "integer", "failed": "integer",
	} {
		if p, ok := status[field]; !ok || p.Type != typ || p.Description == "" {
			t.Errorf("status.%s: %+v, want a described %s", field, p, typ)
		}
	}
	spec := schema.Properties["spec"].Properties
	for _, field := range []string{"minMember", "minResources", "scheduleTimeoutSeconds"} {
		if _, ok := spec[field]; !ok {
			t.Errorf("no spec.%s", field)
		}
	}
	var columns []string
	for _, c := range v.AdditionalPrinterColumns {
		if c.Priority == 0 {
			columns = append(columns, c.JSONPath)
		}
	}
	for _, want := range []string{".status.phase", ".spec.minMember", ".status.scheduled", ".status.running", ".status.succeeded", ".status.failed"} {
		if !slices.Contains(columns, want) {
			t.Errorf("kubectl get podgroups does not show %s (columns %v)", want, columns)
		}
	}
}

// The chart installs the same CRD: its copy must not drift.
func TestChartCarriesTheCRD(t *testing.T) {
	chartCopy, err := os.ReadFile("helm/fluence/files/scheduling.x-k8s.io_podgroups.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(chartCopy) != PodGroupCRD {
		t.Error("helm/fluence/files/scheduling.x-k8s.io_podgroups.yaml differs from crds/scheduling.x-k8s.io_podgroups.yaml; copy the latter over the former")
	}
}
