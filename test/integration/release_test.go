package integration

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/internal/release"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// A release as `make release` builds it, for this machine's platform only
// (the other platforms differ in GOOS/GOARCH alone): every artefact is
// there and in SHA256SUMS, the binaries print the release's version, and
// the packaged chart, rendered by real helm, names the built image by its
// digest. Then, without a container runtime, the chart's objects are
// applied to a local control plane that enforces RBAC and the binary taken
// out of the image's own layer (the OCI layout's manifest for this
// platform) runs with the Deployment's arguments, the ConfigMap's
// configuration and the service account's token until it answers /readyz
// and holds the leader Lease. Not checked here: that a kubelet pulls the
// image by that digest and starts it as user 65532 with a read-only root
// (the image's configuration is checked in internal/image).
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on linux only")
	}
	helm := helmBinary(t)
	version, err := release.ReadVersion("../..")
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("registry.example.com/fluence/fluence:"+version, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	host := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	out := filepath.Join(t.TempDir(), "release")
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		defer cancel()
	}
	start := time.Now()
	res, err := release.Build(ctx, release.Config{
		ModuleDir: "../..", Out: out, Version: version, Image: tag,
		Created: time.Unix(1700000000, 0), Platforms: []v1.Platform{host}, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("release built in %s", time.Since(start).Round(time.Second))

	// Every artefact, checksummed.
	sums := readChecksums(t, res.Checksums)
	for _, f := range []string{
		release.BinaryName("fluence", version, host), release.BinaryName("kubectl-fluence", version, host), release.BinaryName("fluence-scheduler", version, host),
		release.SBOMName(release.BinaryName("fluence", version, host)), release.SBOMName(release.BinaryName("kubectl-fluence", version, host)),
		release.SBOMName(release.BinaryName("fluence-scheduler", version, host)),
		"fluence-" + version + ".tgz", "image/fluence.tar", "image/oci/index.json", release.ImageRefFile,
	} {
		want, ok := sums[f]
		if !ok {
			t.Errorf("SHA256SUMS does not list %s", f)
			continue
		}
		if got := sha256File(t, filepath.Join(out, f)); got != want {
			t.Errorf("%s: SHA-256 %s, SHA256SUMS says %s", f, got, want)
		}
	}
	for _, b := range res.Binaries {
		args := []string{"version"}
		if got, err := exec.Command(b.Path, args...).Output(); err != nil || strings.TrimSpace(string(got)) != version {
			t.Errorf("%s version: %q, %v; want %s", filepath.Base(b.Path), got, err, version)
		}
	}

	// The packaged chart names the image by the layout's digest.
	lp, err := layout.FromPath(res.Image.Layout)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("the OCI layout's index: %v, %v", im, err)
	}
	built := im.Manifests[0].Digest // the multi-arch index, as pushed
	if built != res.Image.Index {
		t.Errorf("the layout holds %s, the release says %s", built, res.Image.Index)
	}
	if got, _ := os.ReadFile(filepath.Join(out, release.ImageRefFile)); strings.TrimSpace(string(got)) != tag.String()+"@"+built.String() {
		t.Errorf("%s: %q", release.ImageRefFile, got)
	}
	if lint, err := runHelm(helm, "lint", "--strict", res.Chart); err != nil {
		t.Errorf("helm lint of the packaged chart: %v\n%s", err, lint)
	}
	manifest, err := runHelm(helm, "template", releaseName, res.Chart, "--namespace", releaseNamespace)
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", res.Chart, err, manifest)
	}
	objs := decodeManifest(t, manifest)
	deployment := findObject(t, objs, "Deployment", releaseName)
	configMap := findObject(t, objs, "ConfigMap", releaseName+"-config")
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	if want := "registry.example.com/fluence/fluence@" + built.String(); len(containers) != 1 || containers[0].(map[string]any)["image"] != want {
		t.Fatalf("the packaged chart's container: %v; want image %s", containers, want)
	}
	config, _, _ := unstructured.NestedString(configMap.Object, "data", "config.yaml")
	args := containerArgs(t, deployment, configMap)

	// The image's own binary, from its layer.
	bin := binaryFromLayout(t, idx, host)
	// The image runs the scheduler alone (cmd/fluence-scheduler), not
	// the CLI with its local control plane.
	if want := sums[release.BinaryName("fluence-scheduler", version, host)]; sha256File(t, bin) != want {
		t.Errorf("the image's binary is not the release's fluence-scheduler-%s-%s binary", host.OS, host.Architecture)
	}

	c := newFullCluster(t, "--authorization-mode=Node,RBAC")
	if _, err := c.Client.CoreV1().Namespaces().Create(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.apply(objs)
	c.waitServed(podGroupGVR)
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	proc := c.startChartSchedulerBinary(t, bin, deployment, config, args, ports[0])
	// Ready means listening with the informers synced, which a loaded
	// machine may take a few seconds to reach: wait for it, as a kubelet's
	// readiness probe does.
	waitReady(t, c.Ctx, fmt.Sprintf("https://127.0.0.1:%d", ports[0]))
	deadline := time.Now().Add(30 * time.Second)
	for {
		lease, err := c.Client.CoordinationV1().Leases(releaseNamespace).Get(c.Ctx, "fluence-scheduler", metav1.GetOptions{})
		if err == nil && ptr.Deref(lease.Spec.HolderIdentity, "") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the image's binary holds no leader Lease within 30 s (%v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.Contains(proc.logs.String(), "forbidden") {
		t.Errorf("the API server refused the chart's service account:\n%s", tail(proc.logs.String(), 10))
	}
}

// readChecksums reads a SHA256SUMS file.
func readChecksums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		sums[file] = sum
	}
	return sums
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// binaryFromLayout writes the file at /fluence in the platform's image
// of idx (the index the layout holds) to a temporary file.
func binaryFromLayout(t *testing.T, outer v1.ImageIndex, p v1.Platform) string {
	t.Helper()
	m, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := outer.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != p.OS || d.Platform.Architecture != p.Architecture {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("the %s image has %d layers (%v), want 1", p.Architecture, len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name == "fluence" {
				path := filepath.Join(t.TempDir(), "fluence-from-image")
				f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.Copy(f, tr); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				return path
			}
		}
		t.Fatalf("the %s image's layer has no /fluence", p.Architecture)
	}
	t.Fatalf("the image has no %s/%s manifest", p.OS, p.Architecture)
	return ""
}
