// Package buildinfo says which build is running, from what the Go
// toolchain recorded in the binary: the main module's version, the VCS
// revision and its time, whether the checkout was modified, and the Go
// version. It reads nothing else and cannot fail: what was not recorded is
// left out.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is what the toolchain recorded about the build: `petstore
// -version` prints it, and the petstore_build_info metric carries its
// module version and Go version as labels.
type Version struct {
	Module    string // the main module's version; "(devel)" when none was recorded
	Revision  string // vcs.revision, when built in a VCS checkout
	Time      string // vcs.time, the revision's commit time
	Modified  bool   // vcs.modified: the checkout had uncommitted changes
	GoVersion string // the toolchain that built the binary
}

// Read reads the build's version through runtime/debug.ReadBuildInfo.
func Read() Version {
	v := Version{Module: "(devel)", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Module = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the line `petstore -version` prints, such as
// "petstore (devel) revision 1a2b3c… 2026-01-02T03:04:05Z modified go1.25.0".
func (v Version) String() string {
	parts := []string{"petstore", v.Module}
	if v.Revision != "" {
		parts = append(parts, "revision", v.Revision)
	}
	if v.Time != "" {
		parts = append(parts, v.Time)
	}
	if v.Modified {
		parts = append(parts, "modified")
	}
	return strings.Join(append(parts, v.GoVersion), " ")
}
