//go:build cpuprofile

package cpuprofile

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Run by make test with -tags cpuprofile: Start writes a profile to the
// file PGO_CPU_PROFILE names, readable by its owner only, and a file it
// cannot create ends the process with a message.
func TestStartWritesProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv("PGO_CPU_PROFILE", path)
	stop := Start()
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
	}
	stop()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		t.Errorf("the profile is not gzipped protobuf, as pprof writes it: %q", data[:min(len(data), 8)])
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("profile mode: %v (%v), want 0600", info.Mode().Perm(), err)
	}
}

func TestStartWithoutVariableDoesNothing(t *testing.T) {
	t.Setenv("PGO_CPU_PROFILE", "")
	Start()()
}

func TestStartUnwritableFileEndsProcess(t *testing.T) {
	if os.Getenv("CPUPROFILE_TEST_CHILD") == "1" {
		Start()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestStartUnwritableFileEndsProcess$")
	cmd.Env = append(os.Environ(), "CPUPROFILE_TEST_CHILD=1", "PGO_CPU_PROFILE="+filepath.Join(t.TempDir(), "missing", "cpu.pprof"))
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Fatalf("exit code %d (%v), want 1; output:\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "petstore: PGO_CPU_PROFILE:") {
		t.Errorf("no message naming PGO_CPU_PROFILE:\n%s", out)
	}
}
