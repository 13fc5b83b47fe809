package localcluster

import (
	"fmt"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/version"
)

// releaseVersion wraps the API server's effective version so that /version
// reports the Kubernetes release the API server is built from. A release
// build of kube-apiserver stamps its gitVersion with -ldflags; built from
// the k8s.io/kubernetes module with a plain go build, go test or go run,
// it would report component-base's placeholder "v0.0.0-master+$Format:%H$",
// which clients that parse the server's version refuse (Kueue's manager
// exits on it). The release is then the version of the k8s.io/kubernetes
// module this binary is linked against or, in a test binary (which carries
// no module versions), the binary version component-base knows (v1.37.0:
// the minor release, not the patch).
type releaseVersion struct {
	basecompatibility.EffectiveVersion
}

func (r releaseVersion) Info() *apimachineryversion.Info {
	info := r.EffectiveVersion.Info()
	if info == nil || !strings.HasPrefix(info.GitVersion, "v0.0.0") {
		return info
	}
	if v := kubeModuleVersion(); v != "" {
		info.GitVersion = v
	} else if bv := r.BinaryVersion(); bv != nil {
		info.GitVersion = fmt.Sprintf("v%d.%d.%d", bv.Major(), bv.Minor(), bv.Patch())
	}
	return info
}

// stampRelease wraps ev unless the binary was stamped.
func stampRelease(ev basecompatibility.EffectiveVersion) basecompatibility.EffectiveVersion {
	if ev == nil || !strings.HasPrefix(version.Get().GitVersion, "v0.0.0") {
		return ev
	}
	return releaseVersion{ev}
}

func kubeModuleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == "k8s.io/kubernetes" {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}
