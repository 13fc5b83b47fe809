// Package experiments embeds the measured experiments (facts recorded from
// public result files; see docs/reference/experiments.md) so that
// `fluence sim` replays them on a fresh clone with nothing else installed.
package experiments

import (
	"embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names lists the embedded workloads by short name.
var Names = map[string]string{
	"run8":  "run8-lammps-mixed.yaml",
	"run10": "run10-indexed-jobs.yaml",
}

// Read returns an embedded workload by short name (run8) or file name.
func Read(name string) ([]byte, error) {
	if f, ok := Names[name]; ok {
		name = f
	}
	data, err := files.ReadFile(name)
	if err != nil {
		var short []string
		for k := range Names {
			short = append(short, k)
		}
		slices.Sort(short)
		return nil, fmt.Errorf("no embedded workload %q (embedded: %s)", name, strings.Join(short, ", "))
	}
	return data, nil
}
