package store

import (
	"os"
	"testing"

	"petstore/internal/etcd/etcdtest"
)

// TestMain stops the etcd cluster the cluster tests share, once every test
// has run.
func TestMain(m *testing.M) {
	code := m.Run()
	etcdtest.StopShared()
	os.Exit(code)
}
