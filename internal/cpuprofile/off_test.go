//go:build !cpuprofile

package cpuprofile

import (
	"os"
	"path/filepath"
	"testing"
)

// An ordinary build writes no profile whatever PGO_CPU_PROFILE says.
func TestStartWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv("PGO_CPU_PROFILE", path)
	Start()()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a build without -tags cpuprofile made %s (%v)", path, err)
	}
}
