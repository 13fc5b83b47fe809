package main

import (
	"os/exec"
	"strings"
	"testing"
)

// controlPlane are the packages of `fluence up`'s control plane: the API
// server's command and its registries, and the etcd server. The scheduler
// talks to an API server and never is one, so none of them may be linked
// into the image's binary. (k8s.io/apiserver's etcd3 storage client is not
// here: kube-scheduler's own options link it, through the generic server
// options, in the stock kube-scheduler too.)
var controlPlane = []string{
	"k8s.io/kubernetes/cmd/kube-apiserver",
	"k8s.io/kubernetes/pkg/controlplane",
	"k8s.io/kubernetes/pkg/registry",
	"k8s.io/kubernetes/pkg/controller",
	"k8s.io/apiextensions-apiserver/pkg/apiserver",
	"go.etcd.io/etcd/server",
}

// deps lists the packages pkg links, as `go list -deps` resolves them for
// a linux build: exactly what the linker is given, without compiling.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Env = append(cmd.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// inControlPlane returns the packages of list under a controlPlane prefix.
func inControlPlane(list []string) []string {
	var found []string
	for _, p := range list {
		for _, prefix := range controlPlane {
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				found = append(found, p)
				break
			}
		}
	}
	return found
}

// The image's binary links no control plane. The CLI, which has `fluence
// up`, must still link every prefix: a prefix that matches nothing there
// has been renamed upstream and would no longer guard anything here.
func TestSchedulerLinksNoControlPlane(t *testing.T) {
	if found := inControlPlane(deps(t, ".")); len(found) > 0 {
		t.Errorf("fluence-scheduler links %d control-plane packages, for instance %s", len(found), strings.Join(found[:min(len(found), 5)], ", "))
	}
	cli := inControlPlane(deps(t, "../fluence"))
	for _, prefix := range controlPlane {
		hit := false
		for _, p := range cli {
			hit = hit || p == prefix || strings.HasPrefix(p, prefix+"/")
		}
		if !hit {
			t.Errorf("the fluence CLI links nothing under %s: the guard names a package that no longer exists", prefix)
		}
	}
}
