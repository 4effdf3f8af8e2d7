package buildinfo

import (
	"runtime"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    Version
		want string
	}{
		{Version{Module: "(devel)", GoVersion: "go1.26.0"}, "petstore (devel) go1.26.0"},
		{Version{Module: "v1.2.3", Revision: "1a2b3c", Time: "2026-01-02T03:04:05Z", Modified: true, GoVersion: "go1.26.0"},
			"petstore v1.2.3 revision 1a2b3c 2026-01-02T03:04:05Z modified go1.26.0"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// A test binary records no module version; Read says so rather than
// leaving it empty, and always knows the Go version.
func TestRead(t *testing.T) {
	t.Parallel()
	v := Read()
	if v.Module == "" || v.GoVersion != runtime.Version() {
		t.Errorf("Read() = %+v, want a module version and %s", v, runtime.Version())
	}
}
