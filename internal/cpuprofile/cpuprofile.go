//go:build cpuprofile

package cpuprofile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Start begins a CPU profile written to the file PGO_CPU_PROFILE names,
// if it names one, and returns what ends it. A file it cannot create ends
// the process.
func Start() (stop func()) {
	path := os.Getenv("PGO_CPU_PROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "petstore: PGO_CPU_PROFILE:", err)
		os.Exit(1)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
