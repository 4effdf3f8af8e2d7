package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"petstore/internal/petstoretest"
	"petstore/internal/testkit"
)

// TestMain runs the tests from the repository's root, more of them at once
// than GOMAXPROCS (testkit.RaiseParallel): most wait on the binary, etcd
// members or podman. It removes the binary built for them.
func TestMain(m *testing.M) {
	flag.Parse()
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	if _, err := os.Stat("go.mod"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: ../.. is not the repository's root:", err)
		os.Exit(1)
	}
	testkit.RaiseParallel(4)
	code := m.Run()
	petstoretest.RemoveBinary()
	os.Exit(code)
}
