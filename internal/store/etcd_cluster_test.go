package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/etcd/etcdtest"
)

// Tests of the etcd store on a real cluster (etcdtest.StartCluster: skipped
// loudly without etcd, failed when PETSTORE_TEST_REQUIRE_ETCD is set).

// openClusterStore opens an etcd store on prefix of cluster, closed at the
// end of the test (Close may be called before).
func openClusterStore(t *testing.T, cluster *etcdtest.Cluster, prefix string, opts ...func(*Options)) *Etcd {
	t.Helper()
	cfg := EtcdConfig{Prefix: prefix, StartTimeout: 30 * time.Second}
	for _, ep := range strings.Split(cluster.Endpoints(), ",") {
		cfg.Endpoints = append(cfg.Endpoints, "http://"+ep)
	}
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	s, err := OpenEtcd(cfg, o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Categories of the largest size still fit the pages a start reads: 600
// of them (about 9 KB each as the gateway sends them, 5 MB in all) are all
// back after a reopen.
func TestEtcdLargeCategoriesReopen(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.Shared(t)
	s := openClusterStore(t, cluster, "large")
	desc := strings.Repeat("<", catalog.MaxDescriptionLen) // 6 bytes of JSON each
	var wg sync.WaitGroup
	errs := make(chan error, 600)
	for i := range 600 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Create(context.Background(), catalog.NewCategory{Name: fmt.Sprintf("big-%d", i), Description: desc, HasDescription: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	s.Close()
	s2 := openClusterStore(t, cluster, "large")
	if n := snapshotOf(t, s2).Len(); n != 600 {
		t.Errorf("after a reopen: %d categories, want 600", n)
	}
}

// In one batch, a keyed retry of a create another instance made is not
// refused as a duplicate of another create of the same name in the batch:
// it goes in a txn of its own and is answered with its create.
func TestEtcdKeyedRetryBesideSameName(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.Shared(t)
	x, y := openClusterStore(t, cluster, "keyed"), openClusterStore(t, cluster, "keyed")
	k1 := catalog.NewIdempotencyKey(scopeOf("aaaa0000"), "k1")
	first, err := x.Create(context.Background(), catalog.NewCategory{Name: "dog", Key: k1})
	if err != nil {
		t.Fatal(err)
	}
	k2 := catalog.NewIdempotencyKey(scopeOf("bbbb1111"), "k2")
	other := newCreateRequest(catalog.NewCategory{Name: "dog", Key: k2})
	retry := newCreateRequest(catalog.NewCategory{Name: "dog", Key: k1})
	y.commit([]*createRequest{other, retry}) // as the group writer would, on y's writer goroutine's behalf
	if retry.err != nil || retry.replayOf != first.ID {
		t.Errorf("the retry: err %v, replay of %d; want a replay of %d", retry.err, retry.replayOf, first.ID)
	}
	if !errors.Is(other.err, catalog.ErrNameTaken) {
		t.Errorf("the other create of the name: %v, want conflict", other.err)
	}
}

// A lease that is gone (revoked by hand, lost with a restore) does not
// fail keyed creates: the store grants a new one and puts the key again.
func TestEtcdKeyedCreateAfterLeaseRevoked(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.Shared(t)
	s := openClusterStore(t, cluster, "lease")
	key := func(k, name string) catalog.NewCategory {
		nc := catalog.NewCategory{Name: name}
		nc.Key = catalog.NewIdempotencyKey(scopeOf("aaaa0000"), k)
		return nc
	}
	if _, err := s.Create(context.Background(), key("k1", "one")); err != nil {
		t.Fatal(err)
	}
	revoke := fmt.Sprintf(`{"ID":%d}`, s.lease.id) // read after the create returned: the writer is idle
	resp, err := http.Post("http://"+strings.Split(cluster.Endpoints(), ",")[0]+"/v3/lease/revoke", "application/json", strings.NewReader(revoke))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoking the lease: %d", resp.StatusCode)
	}
	if c, err := s.Create(context.Background(), key("k2", "two")); err != nil || c.ID != 2 {
		t.Errorf("a keyed create after the lease was revoked: %+v, %v; want id 2", c, err)
	}
}
