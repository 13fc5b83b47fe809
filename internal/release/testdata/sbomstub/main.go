// Command sbomstub is a small binary for TestSBOM: its build information
// lists the modules it links (a test binary's lists none).
package main

import (
	"fmt"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/blang/semver/v4"
)

func main() { fmt.Println(cdx.SpecVersion1_6, semver.MustParse("0.1.0")) }
