//go:build !cpuprofile

// Package cpuprofile writes a CPU profile of a whole run of petstore, for
// default.pgo (make pgo, bench/pgo.sh), in a build made with -tags
// cpuprofile (cpuprofile.go); in every other build, such as this one, Start
// does nothing.
package cpuprofile

// Start does nothing in a build without -tags cpuprofile.
func Start() (stop func()) { return func() {} }
