package schedserver

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/component-base/version"
)

// kubeModule is the module the scheduler's code comes from.
const kubeModule = "k8s.io/kubernetes"

// KubeVersion is the Kubernetes release the scheduler is built from. A
// release build stamps it into component-base with -ldflags (make image,
// the Dockerfile); a plain go build or go run stamps nothing, and
// component-base then reports a placeholder, "v0.0.0-master+$Format:%H$",
// so the version of the k8s.io/kubernetes module the binary was linked
// against is the answer.
func KubeVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return kubeVersionFrom(version.Get().GitVersion, bi)
}

func kubeVersionFrom(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" && !strings.HasPrefix(stamped, "v0.0.0") {
		return stamped
	}
	if bi != nil {
		for _, d := range bi.Deps {
			if d.Path != kubeModule {
				continue
			}
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// printVersion answers kube-scheduler's --version flag, which component-base
// registers globally (verflag): "true" prints fluence's version and the
// Kubernetes release beside it, "raw" the whole build record, as
// kube-scheduler prints it, with the release filled in. It reports whether
// the flag asked for anything. verflag's own printer is not used: it
// would print the placeholder of an unstamped build, and it exits the
// process.
func printVersion(w io.Writer, fluence string) bool {
	f := pflag.Lookup("version")
	if f == nil {
		return false
	}
	switch v := f.Value.String(); v {
	case "", "false":
		return false
	case "raw":
		info := version.Get()
		info.GitVersion = KubeVersion()
		fmt.Fprintf(w, "%#v\n", info)
	default: // "true", or a version set with --version=vX.Y.Z
		fmt.Fprintf(w, "fluence %s (kube-scheduler %s)\n", fluence, KubeVersion())
	}
	return true
}
