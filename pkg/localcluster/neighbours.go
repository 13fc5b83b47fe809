package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// The controllers fluence runs beside, each built from its published Go
// module in a module of its own under third_party/ of the fluence source
// tree (its own go.mod and go.sum), so that its Kubernetes libraries never
// meet fluence's.
const (
	// Kueue is sigs.k8s.io/kueue's manager, cmd/kueue as published.
	Kueue = "kueue"
	// MPIOperator is the MPI Operator's v2 controller
	// (github.com/kubeflow/mpi-operator/pkg/controller) behind a small main
	// of fluence's (third_party/mpi-operator/main.go says why).
	MPIOperator = "mpi-operator"
	// JobSet is sigs.k8s.io/jobset's manager, the main package at the
	// module's root as published.
	JobSet = "jobset"
)

// Neighbours are the names StartKueue, StartMPIOperator and StartJobSet
// run, in the order `fluence up --with` lists them.
var Neighbours = []string{Kueue, MPIOperator, JobSet}

type neighbour struct {
	module string // the published module
	pkg    string // the main package to build, in third_party/<name>
}

var neighbourModules = map[string]neighbour{
	Kueue:       {module: "sigs.k8s.io/kueue", pkg: "sigs.k8s.io/kueue/cmd/kueue"},
	MPIOperator: {module: "github.com/kubeflow/mpi-operator", pkg: "."},
	JobSet:      {module: "sigs.k8s.io/jobset", pkg: "sigs.k8s.io/jobset"},
}

// Built is a neighbour's binary and the module it was built from.
type Built struct {
	Name    string
	Bin     string // the binary, in the user's cache directory
	Module  string // the module path
	Version string // its version, as third_party/<name>/go.mod requires it
	Dir     string // the module's files in the module cache (its CRDs are read from here)
}

// ThirdPartyEnv names the third_party directory of the fluence source
// tree, when the working directory is not inside it.
const ThirdPartyEnv = "FLUENCE_THIRD_PARTY"

// ThirdPartyDir finds the third_party directory: $FLUENCE_THIRD_PARTY, or
// the one beside the go.mod of module github.com/fluence-sched/fluence in
// the working directory or above it.
func ThirdPartyDir() (string, error) {
	if d := os.Getenv(ThirdPartyEnv); d != "" {
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		mod, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module github.com/fluence-sched/fluence\n")) {
			if st, err := os.Stat(filepath.Join(d, "third_party")); err == nil && st.IsDir() {
				return filepath.Join(d, "third_party"), nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no fluence source tree (its third_party directory, where the neighbours are built from) in %s or above it; run from the repository, or set %s", wd, ThirdPartyEnv)
		}
	}
}

var builds sync.Map // name → func() (Built, error)

// BuildNeighbour builds the named neighbour (Kueue, MPIOperator, JobSet)
// once per process, and once per machine for a given go.mod, go.sum,
// source and Go version: the binary is kept in the user's cache directory
// (fluence/third_party/<name>-<version>-<goos>-<goarch>-<hash>). It needs
// the go command, and the Go module proxy the first time.
func BuildNeighbour(ctx context.Context, name string) (Built, error) {
	if _, ok := neighbourModules[name]; !ok {
		return Built{}, fmt.Errorf("no neighbour %q: want one of %s", name, strings.Join(Neighbours, ", "))
	}
	f, _ := builds.LoadOrStore(name, sync.OnceValues(func() (Built, error) { return build(context.WithoutCancel(ctx), name) }))
	return f.(func() (Built, error))()
}

func build(ctx context.Context, name string) (Built, error) {
	n := neighbourModules[name]
	tp, err := ThirdPartyDir()
	if err != nil {
		return Built{}, err
	}
	dir := filepath.Join(tp, name)
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s: go %s: %w\n%s", dir, strings.Join(args, " "), err, stderr.String())
		}
		return out, nil
	}
	out, err := goCmd("list", "-m", "-json", n.module)
	if err != nil {
		return Built{}, err
	}
	var m struct{ Path, Version, Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		return Built{}, fmt.Errorf("go list -m %s: %w", n.module, err)
	}
	if m.Dir == "" { // not downloaded yet: go build below fetches it
		if _, err := goCmd("mod", "download", n.module); err != nil {
			return Built{}, err
		}
		if out, err = goCmd("list", "-m", "-json", n.module); err != nil {
			return Built{}, err
		}
		if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
			return Built{}, fmt.Errorf("go list -m %s: no directory in the module cache", n.module)
		}
	}
	goVersion, err := goCmd("env", "GOVERSION", "GOOS", "GOARCH")
	if err != nil {
		return Built{}, err
	}
	key, err := sourceKey(dir, goVersion)
	if err != nil {
		return Built{}, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	binDir := filepath.Join(cache, "fluence", "third_party", fmt.Sprintf("%s-%s-%s-%s-%s", name, m.Version, runtime.GOOS, runtime.GOARCH, key))
	bin := filepath.Join(binDir, name)
	b := Built{Name: name, Bin: bin, Module: m.Path, Version: m.Version, Dir: m.Dir}
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return b, nil
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return Built{}, err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	if _, err := goCmd("build", "-trimpath", "-o", tmp, n.pkg); err != nil {
		os.Remove(tmp)
		return Built{}, err
	}
	return b, os.Rename(tmp, bin) // atomic: a concurrent build writes the same binary
}

// sourceKey hashes what the binary is built from: third_party/<name>'s
// go.mod, go.sum and Go files, and the Go version and platform.
func sourceKey(dir string, goVersion []byte) (string, error) {
	h := sha256.New()
	h.Write(goVersion)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() || !(e.Name() == "go.mod" || e.Name() == "go.sum" || strings.HasSuffix(e.Name(), ".go")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// readCRDs reads the CustomResourceDefinitions in the YAML files (one or
// more documents each) at paths relative to the module directory dir.
func readCRDs(dir string, paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return nil, err
		}
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(doc, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

// installCRDs creates the CRDs (or updates those already there) and waits
// until the API server has established each.
func installCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if err := createOrReplace(ctx, api, crd); err != nil {
			return fmt.Errorf("installing the CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return slices.ContainsFunc(got.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}), nil
		})
		if err != nil {
			return fmt.Errorf("the CRD %s is not established: %w", crd.Name, err)
		}
	}
	return nil
}

// objectAPI is the part of a typed client createOrReplace uses.
type objectAPI[T metav1.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// createOrReplace creates a cluster-scoped object, or replaces the one of
// its name (a neighbour started again on the same cluster).
func createOrReplace[T metav1.Object](ctx context.Context, api objectAPI[T], obj T) error {
	_, err := api.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := api.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(old.GetResourceVersion())
	_, err = api.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}
