package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// buildVersion is what the Go toolchain recorded in the binary about the
// build: `petstore -version` prints it, and the petstore_build_info metric
// carries its module version and Go version as labels.
type buildVersion struct {
	module    string // the main module's version; "(devel)" when none was recorded
	revision  string // vcs.revision, when built in a VCS checkout
	time      string // vcs.time, the revision's commit time
	modified  bool   // vcs.modified: the checkout had uncommitted changes
	goVersion string // the toolchain that built the binary
}

// readBuildVersion reads the build's version through runtime/debug.ReadBuildInfo.
func readBuildVersion() buildVersion {
	v := buildVersion{module: "(devel)", goVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.module = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// String is the line `petstore -version` prints, such as
// "petstore (devel) revision 1a2b3c… 2026-01-02T03:04:05Z modified go1.25.0".
func (v buildVersion) String() string {
	parts := []string{"petstore", v.module}
	if v.revision != "" {
		parts = append(parts, "revision", v.revision)
	}
	if v.time != "" {
		parts = append(parts, v.time)
	}
	if v.modified {
		parts = append(parts, "modified")
	}
	return strings.Join(append(parts, v.goVersion), " ")
}
