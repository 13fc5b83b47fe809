package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The NetworkPolicy admits the secure port alone (from anyone, or from
// the peers given) and lets the pods reach the API server's ports alone
// (at any address, or at the CIDRs given).
func TestChartNetworkPolicy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sets  []string
		from  int      // ingress peers
		cidrs []string // egress ipBlocks
		ports []string // egress ports
	}{
		{"defaults", nil, 0, nil, []string{"443", "6443"}},
		{"peers and the control plane's addresses", []string{
			"json:networkPolicy.ingressFrom=[{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"monitoring\"}}}]",
			"networkPolicy.apiServer.cidrs={10.0.0.10/32,10.0.0.11/32}", "networkPolicy.apiServer.ports={6443}",
		}, 1, []string{"10.0.0.10/32", "10.0.0.11/32"}, []string{"6443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := mustRender(t, append([]string{"networkPolicy.enabled=true", "securePort=10300"}, tc.sets...)...)
			np := mustFind(t, objs, "NetworkPolicy", releaseName)
			spec := np["spec"].(map[string]any)
			dep := mustFind(t, objs, "Deployment", releaseName)
			for k, v := range get(spec, "podSelector", "matchLabels").(map[string]any) {
				if get(dep, "spec", "template", "metadata", "labels", k) != v {
					t.Errorf("the policy selects %s=%v, which the scheduler's pods do not carry", k, v)
				}
			}
			if got := strs(spec["policyTypes"]); !slices.Equal(got, []string{"Ingress", "Egress"}) {
				t.Errorf("policyTypes %v: want both directions restricted", got)
			}
			ingress := spec["ingress"].([]any)
			if len(ingress) != 1 || fmt.Sprint(get(ingress[0], "ports", "0", "port")) != "10300" || len(get(ingress[0], "ports").([]any)) != 1 {
				t.Errorf("ingress %v, want the secure port 10300 alone", ingress)
			}
			if from, _ := get(ingress[0], "from").([]any); len(from) != tc.from {
				t.Errorf("ingress from %v, want %d peers", from, tc.from)
			}
			egress := spec["egress"].([]any)
			if len(egress) != 1 {
				t.Fatalf("egress %v, want one rule: the API server", egress)
			}
			var ports, cidrs []string
			for _, p := range get(egress[0], "ports").([]any) {
				ports = append(ports, fmt.Sprint(get(p, "port")))
			}
			if to, ok := get(egress[0], "to").([]any); ok {
				for _, peer := range to {
					cidrs = append(cidrs, fmt.Sprint(get(peer, "ipBlock", "cidr")))
				}
			}
			if !slices.Equal(ports, tc.ports) || !slices.Equal(cidrs, tc.cidrs) {
				t.Errorf("egress to %v on ports %v, want %v on %v", cidrs, ports, tc.cidrs, tc.ports)
			}
		})
	}
	refused(t, "/networkPolicy/apiServer/cidrs", "networkPolicy.apiServer.cidrs={apiserver}")
	refused(t, "/networkPolicy/apiServer/ports", "networkPolicy.apiServer.ports={}")
}

// The cert-manager recipe: a Certificate for the names the API server and
// Prometheus dial, its Secret served by the scheduler, and its CA injected
// into the APIService (when there is one), which then verifies the
// scheduler.
func TestChartCertManager(t *testing.T) {
	objs := mustRender(t, "inspect.apiService=true", "inspect.certManager.enabled=true", "inspect.certManager.issuerRef.name=cluster-ca", "inspect.certManager.issuerRef.kind=ClusterIssuer")
	cert := mustFind(t, objs, "Certificate", releaseName)
	if get(cert, "apiVersion") != "cert-manager.io/v1" || get(cert, "spec", "issuerRef", "name") != "cluster-ca" || get(cert, "spec", "issuerRef", "kind") != "ClusterIssuer" {
		t.Errorf("Certificate %v: want cert-manager.io/v1 from ClusterIssuer cluster-ca", cert)
	}
	names := strs(get(cert, "spec", "dnsNames"))
	for _, svc := range []string{releaseName + "-inspect", releaseName + "-metrics"} {
		mustFind(t, objs, "Service", svc)
		if want := svc + "." + releaseNS + ".svc"; !slices.Contains(names, want) {
			t.Errorf("the certificate's names %v lack %s", names, want)
		}
	}
	secret := fmt.Sprint(get(cert, "spec", "secretName"))
	pod := get(mustFind(t, objs, "Deployment", releaseName), "spec", "template", "spec")
	var mounted bool
	for _, v := range pod.(map[string]any)["volumes"].([]any) {
		mounted = mounted || get(v, "secret", "secretName") == secret
	}
	args := strings.Join(strs(get(pod, "containers", "0", "args")), " ")
	if !mounted || !strings.Contains(args, "--tls-cert-file=/etc/fluence-tls/tls.crt") || !strings.Contains(args, "--tls-private-key-file=/etc/fluence-tls/tls.key") {
		t.Errorf("the scheduler does not serve the Secret %s (mounted %v, args %s)", secret, mounted, args)
	}
	api := mustFind(t, objs, "APIService", "v1alpha1.inspect.fluence.flux-framework.org")
	if got, want := get(api, "metadata", "annotations", "cert-manager.io/inject-ca-from"), releaseNS+"/"+releaseName; got != want {
		t.Errorf("the APIService's inject-ca-from is %v, want the Certificate %s", got, want)
	}
	if get(api, "spec", "insecureSkipTLSVerify") != nil {
		t.Error("the APIService skips verifying the scheduler's certificate")
	}
	refused(t, "issuerRef.name is empty", "inspect.certManager.enabled=true")
	refused(t, "set one way", "inspect.certManager.enabled=true", "inspect.certManager.issuerRef.name=ca", "inspect.tlsSecret=mine")
	refused(t, "/inspect/certManager/issuerRef/kind", "inspect.certManager.enabled=true", "inspect.certManager.issuerRef.name=ca", "inspect.certManager.issuerRef.kind=Vault")
}
