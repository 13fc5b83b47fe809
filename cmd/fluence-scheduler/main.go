// Command fluence-scheduler is the container image's binary: the fluence
// CLI's `scheduler` and `version` subcommands and nothing else. Without
// `fluence up` and `fluence demo` it links no kube-apiserver, etcd server
// or controllers, so the image carries (and its SBOM lists) only what the
// scheduler runs; docs/install.md ("The image") gives both binaries'
// sizes. Its arguments are the CLI's: `fluence-scheduler scheduler
// --config ...`.
package main

import (
	"os"

	"github.com/fluence-sched/fluence/internal/schedserver"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	root := schedserver.NewRoot("fluence-scheduler", "kube-scheduler with the fluence plugin (the image's binary)", version)
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
