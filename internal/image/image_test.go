package image

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The real image, as `make image` makes it: the scheduler compiled for
// every platform of the image, assembled, written, read back from disk and
// checked; then the binary for this machine's platform, taken out of its
// image's layer, runs `fluence version`.
//
// Compiling fluence (kube-scheduler and its dependencies) for two
// platforms is what this test's time goes to: minutes on two cores with a
// cold build cache, seconds with a warm one (the cache is shared with
// `make image`, which compiles with the same flags).
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles fluence for two platforms: skipped with -short")
	}
	m := testMetadata()
	work := t.TempDir()
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-30*time.Second))
		defer cancel()
	}
	var bins []Binary
	for _, p := range DefaultPlatforms {
		out := filepath.Join(work, "fluence-"+p.OS+"-"+p.Architecture)
		start := time.Now()
		if err := Compile(ctx, Build{ModuleDir: "../..", Platform: p, Version: m.Version, Out: out}); err != nil {
			t.Fatal(err)
		}
		t.Logf("compiled fluence for %s in %s", p, time.Since(start).Round(time.Second))
		bins = append(bins, Binary{Platform: p, Path: out})
	}
	idx, err := Assemble(bins, m)
	if err != nil {
		t.Fatal(err)
	}
	tag := testTag(t, m)
	out, err := Write(filepath.Join(work, "image"), idx, tag, m.Created)
	if err != nil {
		t.Fatal(err)
	}
	binaries := checkOutputs(t, out, tag, m, DefaultPlatforms)
	for _, p := range DefaultPlatforms {
		checkStaticELF(t, p.Architecture, binaries[p.Architecture])
		checkSchedulerOnly(t, p.Architecture, binaries[p.Architecture])
	}

	host, ok := binaries[runtime.GOARCH]
	if runtime.GOOS != "linux" || !ok {
		t.Skipf("the image has no binary this machine (%s/%s) runs", runtime.GOOS, runtime.GOARCH)
	}
	exe := filepath.Join(work, "from-the-layer")
	if err := os.WriteFile(exe, host, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command(exe, "version").Output()
	if err != nil {
		t.Fatalf("the %s binary from its layer: fluence version: %v", runtime.GOARCH, err)
	}
	if strings.TrimSpace(string(got)) != m.Version {
		t.Errorf("the %s binary from its layer prints version %q, want %q", runtime.GOARCH, got, m.Version)
	}
	// The Kubernetes release is stamped into component-base, so the raw
	// record kube-scheduler prints carries it whole, major and minor too.
	kube, err := kubeRelease(ctx, "go", "../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err = exec.Command(exe, "scheduler", "--version=raw").Output()
	if err != nil {
		t.Fatalf("the %s binary from its layer: fluence scheduler --version=raw: %v", runtime.GOARCH, err)
	}
	for _, want := range []string{`GitVersion:"` + kube.version + `"`, `Major:"` + kube.major + `"`, `Minor:"` + kube.minor + `"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("fluence scheduler --version=raw printed %s, want %s in it", got, want)
		}
	}
}

// checkSchedulerOnly reads the build information of the image's binary (what
// `go version -m` prints): it is cmd/fluence-scheduler, and no etcd server
// module went into it, as `fluence up` would bring.
func checkSchedulerOnly(t *testing.T, arch string, binary []byte) {
	t.Helper()
	info, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("the %s binary's build information: %v", arch, err)
	}
	if want := "github.com/fluence-sched/fluence/cmd/fluence-scheduler"; info.Path != want {
		t.Errorf("the %s binary is %s, want %s", arch, info.Path, want)
	}
	for _, d := range info.Deps {
		if strings.HasPrefix(d.Path, "go.etcd.io/etcd/server") {
			t.Errorf("the %s binary links %s@%s", arch, d.Path, d.Version)
		}
	}
}
