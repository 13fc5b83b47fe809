package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// The fluence metrics of issue 25 as Prometheus reads them from
// /metrics: two replicas of `fluence scheduler` with leader election run
// against a real API server, and after
//   - a group placed at once, a lone pod, and a group whose pods ask for
//     the same host port (its first placement packs them onto one node,
//     which turns the second away: the allocation is withdrawn and the
//     group placed again after a 2 s hold),
//   - a group bigger than the cluster (rejected),
//   - the lone pod's first Binding refused by a validating admission
//     webhook, as a policy engine may refuse one,
//
// the leader's wait histogram counts one wait per group placed, one of
// them over the hold, and its counters say what happened: as many
// rejections and withdrawals as the scheduler recorded events for, as many
// bind failures as the webhook refused, no Permit timeout. The standby's
// /metrics has no fluence series at all.
func TestMetrics(t *testing.T) {
	c := newCluster(t)
	c.addNodes("node", 3, "4", "8Gi")
	startNodeSim(c, simOptions{})
	hook := startBindingWebhook(t, c, "refused")

	bin := buildFluence(t)
	kubeconfig := c.kubeconfigFile()
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(setClient(fluenceConfig(t, nil), "kubeconfig", kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	leader := startReplica(t, bin, "fluence-a", config, kubeconfig, ports[0], c.Config.BearerToken)
	leader.waitLeading(t, time.Minute)
	standby := startReplica(t, bin, "fluence-b", config, kubeconfig, ports[1], c.Config.BearerToken)
	waitReady(t, c.Ctx, standby.url)

	// The group whose pods repel each other first, alone, so that its
	// first placement packs both pods onto one node.
	repelPods := repelUnjudged(groupPods("repel", 2, "1", 0, 0), "repel")
	c.createPods(repelPods...)
	waitAllBound(c, repelPods, time.Minute)
	c.waitForEvent(10*time.Second, "repel-0", "FluenceGroupWithdrawn", "turned pod")

	placed := groupPods("placed", 2, "1", 0, 0)
	refused := newTestPod("refused", "fluence", "1", "", 0, nil)
	// One pod of a group of 50 one-CPU pods, on 12 CPUs: rejected from
	// that pod, once (no other pod of it comes to change the verdict).
	huge := groupPods("huge", 50, "1", 0, 0)[0]
	c.createPods(append(placed, refused, huge)...)
	waitAllBound(c, append(placed, refused), time.Minute)
	c.waitForEvent(30*time.Second, huge.Name, "FluenceGroupRejected", "cannot be placed")

	want := map[string]float64{
		"fluence_group_wait_seconds":      3, // repel, placed, refused
		"fluence_group_rejections_total":  float64(c.eventCount(huge.Name, "FluenceGroupRejected")),
		"fluence_group_withdrawals_total": float64(c.eventCount("repel-0", "FluenceGroupWithdrawn")),
		"fluence_bind_failures_total":     float64(hook.refusals()),
		"fluence_permit_timeouts_total":   0,
	}
	if want["fluence_group_rejections_total"] != 1 || want["fluence_group_withdrawals_total"] < 1 || want["fluence_bind_failures_total"] != 1 {
		t.Fatalf("the run did not do what the test needs: %v", want)
	}
	// The counters are written as the leader carries out the core's
	// effects; give the last ones a moment.
	var got map[string]float64
	var wait1s float64
	err = wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, body := leader.get(t, "/metrics")
		if code != http.StatusOK {
			return false, nil
		}
		got, wait1s = fluenceMetrics(t, body, "fluence")
		for name, w := range want {
			if got[name] != w {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("the leader's fluence series of profile fluence: %v (waits within 1 s: %v)", got, wait1s)
	for name, w := range want {
		if v, ok := got[name]; !ok || v != w {
			t.Errorf("%s{profile=\"fluence\"} = %v (served: %v), want %v", name, v, ok, w)
		}
	}
	if err != nil {
		t.Logf("the leader's fluence series:\n%s", fluenceLines(must(leader.get(t, "/metrics"))))
	}
	// The host-port group waited out its 2 s hold; the others were placed
	// at once.
	if total := got["fluence_group_wait_seconds"]; wait1s >= total || got["fluence_group_wait_seconds_sum"] < 2 {
		t.Errorf("waits: %v of %v within 1 s, %v s in all; want the host-port group's over its 2 s hold", wait1s, total, got["fluence_group_wait_seconds_sum"])
	}

	code, body := standby.get(t, "/metrics")
	if code != http.StatusOK || strings.Contains(body, "\nfluence_") {
		t.Errorf("the standby's /metrics: %d, with fluence series:\n%s", code, fluenceLines(body))
	}
}

func must(_ int, body string) string { return body }

// fluenceMetrics parses a /metrics body and returns the profile's fluence
// series by name (a counter's value; a histogram's count under its name,
// and its sum as NAME_sum), and how many observations of
// fluence_group_wait_seconds are at most 1 s.
func fluenceMetrics(t *testing.T, body, profile string) (map[string]float64, float64) {
	t.Helper()
	families, err := testutil.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := map[string]float64{}
	var within1s float64
	for name, f := range families {
		if !strings.HasPrefix(name, "fluence_") {
			continue
		}
		for _, m := range f.GetMetric() {
			mine := false
			for _, l := range m.GetLabel() {
				mine = mine || l.GetName() == "profile" && l.GetValue() == profile
			}
			switch {
			case !mine:
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				out[name] += float64(h.GetSampleCount())
				out[name+"_sum"] += h.GetSampleSum()
				for _, b := range h.GetBucket() {
					if name == "fluence_group_wait_seconds" && b.GetUpperBound() == 1 {
						within1s += float64(b.GetCumulativeCount())
					}
				}
			case m.GetCounter() != nil:
				out[name] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name] += m.GetGauge().GetValue()
			}
		}
	}
	return out, within1s
}

// eventCount counts the events with the reason on a pod of c.NS, each
// repetition of a series too.
func (c *cluster) eventCount(pod, reason string) int {
	c.t.Helper()
	list, err := c.Client.EventsV1().Events(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Name != pod || e.Reason != reason {
			continue
		}
		n++
		if e.Series != nil {
			n += int(e.Series.Count) - 1
		}
	}
	return n
}

// bindingWebhook is a validating admission webhook, served by the test,
// that refuses the first Binding of one pod, as a policy engine may refuse
// a binding, and counts what it refused. It refuses every Binding of the
// probe pod, by which the test learns that the API server calls it.
type bindingWebhook struct {
	pod     string
	mu      sync.Mutex
	refused int
}

const webhookProbe = "webhook-probe"

func (w *bindingWebhook) refusals() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused
}

func (w *bindingWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.SubResource == "binding" {
		w.mu.Lock()
		refuse := req.Name == webhookProbe || req.Name == w.pod && w.refused == 0
		if refuse && req.Name == w.pod {
			w.refused++
		}
		w.mu.Unlock()
		if refuse {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "bindings of pod " + req.Name + " are held by policy"}
		}
	}
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}

// startBindingWebhook serves the webhook over TLS on the loopback address,
// registers it for pods/binding in c.NS, and returns once the API server
// calls it.
func startBindingWebhook(t *testing.T, c *cluster, pod string) *bindingWebhook {
	t.Helper()
	hook := &bindingWebhook{pod: pod}
	certPEM, cert := selfSignedLoopback(t)
	srv := httptest.NewUnstartedServer(hook)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "fluence-it-bindings"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "bindings.fluence-it.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/validate"), CABundle: certPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: c.NS}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
	if _, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(c.Ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	})

	// The API server learns of the configuration through its informer:
	// bind a pod no scheduler takes until the webhook refuses it.
	probe := newTestPod(webhookProbe, "no-scheduler", "1", "", 0, nil)
	c.createPods(probe)
	var last error
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = c.Client.CoreV1().Pods(c.NS).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: webhookProbe, Namespace: c.NS},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "node-0"},
		}, metav1.CreateOptions{})
		return last != nil && strings.Contains(last.Error(), "held by policy"), nil
	})
	if err != nil {
		t.Fatalf("the API server does not call the binding webhook within 30 s (last answer: %v)", last)
	}
	if err := c.Client.CoreV1().Pods(c.NS).Delete(c.Ctx, webhookProbe, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	return hook
}

// selfSignedLoopback returns a certificate for 127.0.0.1, self-signed,
// as PEM and as a tls.Certificate.
func selfSignedLoopback(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fluence-it-webhook"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, cert
}
