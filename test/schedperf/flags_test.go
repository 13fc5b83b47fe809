//go:build schedperf

package schedperf

import (
	goflag "flag"
	"runtime"
)

func flagLookup(name string) *goflag.Flag { return goflag.Lookup(name) }

func setFlag(name, value string) error { return goflag.Set(name, value) }

func runtimeNumCPU() int { return runtime.NumCPU() }
