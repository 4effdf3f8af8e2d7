package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/etcd"
	"petstore/internal/etcd/etcdtest"
)

// Tests of the etcd store against a fake JSON gateway
// (etcdtest.Fake): the shapes etcd 3.4 and 3.6 write (int64 as strings, zero
// values omitted, their different error bodies, watch lines), and faults a
// real cluster cannot be made to show on cue (a txn applied whose answer is
// a 503). The real cluster is in etcd_cluster_test.go; the client alone is
// tested in internal/etcd.

// openFakeStore opens an etcd store on the endpoints of cfg (prefix "p"
// unless it names one), with its log discarded unless opts say otherwise,
// and closes it at the end of the test.
// putOtherCreate puts into f, under the prefix p, what another instance's
// create of name as id 1 leaves: the counter, the name's claim with
// another token, and the record.
func putOtherCreate(f *etcdtest.Fake, name string) {
	f.Put("/p/counter", []byte("1"))
	f.Put("/p/names/"+strings.ToLower(name), []byte(`{"id":1,"token":"other"}`))
	f.Put("/p/categories/0000000000000000001", fmt.Appendf(nil, `{"id":1,"name":%q}`, name))
}

// openUnwatchedFakeStore opens a store on a fake gateway of etcd 3.4 whose
// watches are held: the cache learns nothing of what is put after.
func openUnwatchedFakeStore(t *testing.T, opts ...func(*Options)) (*etcdtest.Fake, *Etcd) {
	t.Helper()
	f, srv := etcdtest.NewFake(t, "3.4")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}}, opts...)
	f.HoldWatches()
	t.Cleanup(f.ReleaseWatches)
	return f, s
}

func openFakeStore(t *testing.T, cfg EtcdConfig, opts ...func(*Options)) *Etcd {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = "p"
	}
	cfg.StartTimeout = 5 * time.Second
	o := Options{Log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	s, err := OpenEtcd(cfg, o)
	if err != nil {
		t.Fatalf("OpenEtcd: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestEtcdStoreOnFakeGateway(t *testing.T) {
	t.Parallel()
	for _, style := range []string{"3.4", "3.6"} {
		t.Run(style, func(t *testing.T) {
			f, srv := etcdtest.NewFake(t, style)
			s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
			for i, name := range []string{"dog", "cat"} {
				if c := mustStoreCreate(t, s, name); c.ID != int64(i+1) {
					t.Errorf("id of %q: got %d, want %d", name, c.ID, i+1)
				}
			}
			key := catalog.NewIdempotencyKey([32]byte{1}, "a-new-key")
			for _, nc := range []catalog.NewCategory{{Name: "DOG"}, {Name: "DOG", Key: key}} {
				_, err := s.Create(context.Background(), nc)
				var taken *catalog.NameTakenError
				if !errors.As(err, &taken) || taken.ID != 1 || taken.Stored != "dog" {
					t.Errorf("create DOG (keyed %v): got %v, want the name held by dog (id 1)", nc.Key != nil, err)
				}
			}
			if got, want := listString(t, s), `[{"id":1,"name":"dog"},{"id":2,"name":"cat"}]`; got != want {
				t.Errorf("list: got %s, want %s", got, want)
			}
			if got := string(f.Value("/p/counter")); got != "2" {
				t.Errorf("counter: got %q, want 2", got)
			}
			// Another instance's create, not yet seen by the watch: Get
			// reads it through.
			f.Put("/p/categories/0000000000000000009", []byte(`{"id":9,"name":"elsewhere"}`))
			body, err := s.Get(context.Background(), 9)
			if err != nil || string(body) != `{"id":9,"name":"elsewhere"}` {
				t.Errorf("get 9: got %s, %v", body, err)
			}
			if _, err := s.Get(context.Background(), 10); !errors.Is(err, catalog.ErrNotFound) {
				t.Errorf("get 10: got %v, want catalog.ErrNotFound", err)
			}
		})
	}
}

// A txn that etcd applied but answered 503 is settled by sending it again
// (the watch, held here, would tell too: see etcd_faults_test.go): it fails
// its compare, the keys read back show our tokens, so the create answers
// 201 with the id it got, and nothing is stored twice.
func TestEtcdStoreSettlesUnknownOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault string
		txns  int
		why   string
	}{
		{"apply-then-503", 4, "one lost answer; sent again, it fails its compare; the read back; the next create"},
		{"503", 3, "one lost answer; sent again, it commits; the next create"},
	} {
		fault := tc.fault
		t.Run(fault, func(t *testing.T) {
			f, srv := etcdtest.NewFake(t, "3.4")
			f.SetTxnFault(func(n int) string {
				if n == 1 {
					return fault
				}
				return ""
			})
			s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
			f.HoldWatches()
			if c := mustStoreCreate(t, s, "dog"); c.ID != 1 {
				t.Errorf("id: got %d, want 1", c.ID)
			}
			f.ReleaseWatches()
			mustStoreCreate(t, s, "cat")
			if n := f.Txns(); n != tc.txns {
				t.Errorf("txns sent: got %d, want %d (%s)", n, tc.txns, tc.why)
			}
			if got := string(f.Value("/p/counter")); got != "2" {
				t.Errorf("counter: got %q, want 2", got)
			}
			if got := listString(t, s); got != `[{"id":1,"name":"dog"},{"id":2,"name":"cat"}]` {
				t.Errorf("list: got %s", got)
			}
		})
	}
}

// A create that loses the race for its name to another instance is a 409;
// the others of its batch are retried with the counter the read back
// brought, without another read.
func TestEtcdStoreLostRace(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.6")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
	// Another instance created "dog" as id 1.
	putOtherCreate(f, "Dog")
	_, err := s.Create(context.Background(), catalog.NewCategory{Name: "dog"})
	var taken *catalog.NameTakenError
	if !errors.As(err, &taken) || taken.ID != 1 || taken.Stored != "" && taken.Stored != "Dog" {
		t.Fatalf("create dog: got %v, want the name held by category 1", err)
	}
	if c := mustStoreCreate(t, s, "cat"); c.ID != 2 {
		t.Errorf("cat: got id %d, want 2", c.ID)
	}
}

// When the read back after a failed compare gets no answer, the create
// was not applied (its compare failed), and it fails as etcd being
// unavailable, never as a conflict or a 201; the next create reads back
// and goes on with the counter another instance moved.
func TestEtcdStoreReadBackUnanswered(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.4")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
	// Another instance created "dog" as id 1, unseen by this one's writer.
	putOtherCreate(f, "Dog")
	// The create's txn fails its compare; the two after it are its read
	// back, on the one endpoint twice.
	first := f.Txns() + 1
	f.SetTxnFault(func(n int) string {
		if n == first+1 || n == first+2 {
			return "503"
		}
		return ""
	})
	if _, err := s.Create(context.Background(), catalog.NewCategory{Name: "cat"}); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("create cat while the read back fails: got %v, want %v", err, catalog.ErrUnavailable)
	}
	// Unanswered reads mark etcd down, so creates wait for the next probe
	// that gets an answer.
	if err := s.Health(); !errors.Is(err, catalog.ErrUnavailable) {
		t.Errorf("health after the read back failed: got %v, want %v", err, catalog.ErrUnavailable)
	}
	for deadline := time.Now().Add(10 * etcdProbeEvery); s.Health() != nil && time.Now().Before(deadline); {
		time.Sleep(etcdProbeEvery / 8)
	}
	if c := mustStoreCreate(t, s, "cat"); c.ID != 2 {
		t.Errorf("cat again: got id %d, want 2", c.ID)
	}
	if got := string(f.Value("/p/counter")); got != "2" {
		t.Errorf("counter: got %q, want 2", got)
	}
}

// A txn whose answer was lost, sent again, fails its compare; when the
// read back then gets no answer either, the watch settles it: the create
// was applied, so it answers 201, never a failure.
func TestEtcdStoreReadBackUnansweredInDoubt(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.4")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
	first := f.Txns() + 1
	f.SetTxnFault(func(n int) string {
		switch n - first {
		case 0:
			return "apply-then-503"
		case 2: // the read back after the second send failed its compare
			return "503"
		case 3: // and again: now only the watch can tell
			go f.ReleaseWatches()
			return "503"
		}
		return ""
	})
	f.HoldWatches()
	if c := mustStoreCreate(t, s, "dog"); c.ID != 1 {
		t.Errorf("dog: got id %d, want 1", c.ID)
	}
	if n := f.Txns() - first + 1; n != 4 {
		t.Errorf("txns sent: got %d, want 4 (lost answer, sent again, read back twice)", n)
	}
	if got := listString(t, s); got != `[{"id":1,"name":"dog"}]` {
		t.Errorf("list: got %s", got)
	}
}

// A txn left unanswered that was never applied: another instance moved
// the counter meanwhile, so sent again it fails its compare, and its read
// back goes unanswered too. The create is not failed: it is sent again,
// read back, and retried on the fresh counter, and answers 201 with the
// next id, with no help from the watch (held throughout).
func TestEtcdStoreReadBackUnansweredInDoubtNeverApplied(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.4")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
	f.HoldWatches()
	t.Cleanup(f.ReleaseWatches)
	// Another instance created "cat" as id 1, unseen by this one.
	putOtherCreate(f, "cat")
	first := f.Txns() + 1
	f.SetTxnFault(func(n int) string {
		switch n - first {
		case 0: // answered 503, not applied
			return "503"
		case 2, 3: // the read back after the second send failed its compare
			return "503"
		}
		return ""
	})
	c, err := s.Create(context.Background(), catalog.NewCategory{Name: "dog"})
	if err != nil || c.ID != 2 {
		t.Fatalf("create dog: got id %d, %v; want id 2", c.ID, err)
	}
	if got := string(f.Value("/p/counter")); got != "2" {
		t.Errorf("counter: got %q, want 2", got)
	}
}

// A record above the counter (the counter was set back by hand) refuses
// creates after one txn and its read back, without spinning on them.
func TestEtcdStoreCounterBehindRefusesWithoutSpinning(t *testing.T) {
	t.Parallel()
	f, s := openUnwatchedFakeStore(t)
	f.Put("/p/categories/0000000000000000001", []byte(`{"id":1,"name":"cat"}`))
	first := f.Txns()
	_, err := s.Create(context.Background(), catalog.NewCategory{Name: "dog"})
	if !errors.Is(err, errCounterBehind) {
		t.Errorf("create dog over record 1: got %v, want %v", err, errCounterBehind)
	}
	if n := f.Txns() - first; n != 2 {
		t.Errorf("txns sent: got %d, want 2 (the create's, its read back)", n)
	}
	if v := f.Value("/p/categories/0000000000000000001"); string(v) != `{"id":1,"name":"cat"}` {
		t.Errorf("record 1: got %s, want it untouched", v)
	}
}

// A batch's txn guards its records with one compare of the range of their
// keys, ending at the end of the category keys when the batch takes the
// largest id; once a key that is no record's was found among them, with a
// compare of each record key.
func TestEtcdTxnComparesRecordRange(t *testing.T) {
	t.Parallel()
	s := &Etcd{keys: newEtcdKeys("p")}
	batch := func(n int) []*pendingCreate {
		pending := make([]*pendingCreate, n)
		for i := range pending {
			name := fmt.Sprintf("n%d", i)
			pending[i] = &pendingCreate{req: &createRequest{nc: catalog.NewCategory{Name: name}, key: name}, token: "t"}
		}
		return pending
	}
	// records returns the create compares of a txn's keys other than names.
	records := func(txn *etcd.TxnRequest) []string {
		var out []string
		for _, c := range txn.Compare {
			if c.Target == "CREATE" && !bytes.HasPrefix(c.Key, s.keys.names) {
				out = append(out, fmt.Sprintf("%s..%s", c.Key, c.RangeEnd))
			}
		}
		return out
	}
	for _, tc := range []struct {
		counter     int64
		n           int
		compareEach bool
		want        []string
	}{
		{counter: 5, n: 3, want: []string{"/p/categories/0000000000000000006../p/categories/0000000000000000009"}},
		{counter: 0, n: 1, want: []string{"/p/categories/0000000000000000001../p/categories/0000000000000000002"}},
		{counter: math.MaxInt64 - 2, n: 2, want: []string{"/p/categories/9223372036854775806../p/categories0"}},
		{counter: 5, n: 2, compareEach: true, want: []string{"/p/categories/0000000000000000006..", "/p/categories/0000000000000000007.."}},
	} {
		s.counter, s.compareEach = tc.counter, tc.compareEach
		txn := s.buildTxn(batch(tc.n))
		if got := records(txn); !slices.Equal(got, tc.want) {
			t.Errorf("counter %d, %d creates, compare each %v: record compares %q, want %q", tc.counter, tc.n, tc.compareEach, got, tc.want)
		}
		if got, want := len(txn.Compare), 1+tc.n+len(tc.want); got != want {
			t.Errorf("counter %d, %d creates: %d compares, want %d (the counter, each name, the records)", tc.counter, tc.n, got, want)
		}
	}
}

// A key another writer made up among the record keys above the counter
// fails the range compare of every batch that covers it, though it is no
// record. The read back after the first such txn finds it: a warning names
// it, once, however many txns fail later, and each record key is compared
// from then on, so creates go on in one txn each, never over a record.
func TestEtcdStoreForeignKeyAmongRecords(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.4")
	logs := &lockedBuffer{}
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}}, withStoreLog(logs))
	const foreign = "/p/categories/00000000000000000010" // between the keys of ids 1 and 2
	f.Put(foreign, []byte("not a record"))
	// A name claimed with no record: each create of it fails its txn, and
	// leaves the counter where it was.
	f.Put("/p/names/zebra", []byte(`{"id":9,"token":"other"}`))
	first := f.Txns()
	for range 2 {
		var taken *catalog.NameTakenError
		if _, err := s.Create(context.Background(), catalog.NewCategory{Name: "zebra"}); !errors.As(err, &taken) {
			t.Fatalf("create zebra: got %v, want the name taken", err)
		}
	}
	if n := f.Txns() - first; n != 4 {
		t.Errorf("txns for two creates of a claimed name: got %d, want 4 (each refused, read back)", n)
	}
	first = f.Txns()
	for i, name := range []string{"dog", "cat"} {
		if c := mustStoreCreate(t, s, name); c.ID != int64(i+1) {
			t.Errorf("%s: got id %d, want %d", name, c.ID, i+1)
		}
	}
	if n := f.Txns() - first; n != 2 {
		t.Errorf("txns for the next two creates: got %d, want 2", n)
	}
	if v := f.Value(foreign); string(v) != "not a record" {
		t.Errorf("the foreign key holds %q, want it untouched", v)
	}
	if n := strings.Count(logs.String(), "creates now compare each category key"); n != 1 {
		t.Errorf("warnings: got %d, want 1; log:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), foreign) {
		t.Errorf("the warning does not name %s; log:\n%s", foreign, logs.String())
	}
	// A record at the next id, which the cache does not know: compared on
	// its own, it refuses the create.
	f.HoldWatches()
	t.Cleanup(f.ReleaseWatches)
	wantRefusedOver(t, f, s, "owl", 3, "eel")
}

// wantRefusedOver puts the record of id, named held, where s's cache does
// not see it (its watch held), and checks that a create of name is refused
// as the counter being behind, and leaves the record as it was.
func wantRefusedOver(t *testing.T, f *etcdtest.Fake, s *Etcd, name string, id int64, held string) {
	t.Helper()
	key := fmt.Sprintf("/p/categories/%019d", id)
	record := catalog.Category{ID: id, Name: held}.AppendJSON(nil)
	f.Put(key, record)
	if _, err := s.Create(context.Background(), catalog.NewCategory{Name: name}); !errors.Is(err, errCounterBehind) {
		t.Errorf("create %s over record %d: got %v, want %v", name, id, err, errCounterBehind)
	}
	if v := f.Value(key); !bytes.Equal(v, record) {
		t.Errorf("record %d: got %s, want it untouched", id, v)
	}
}

// The range a txn compares is its batch's ids, no more and no less: a
// record far above them does not refuse it, and one at the largest id
// refuses a create of that id.
func TestEtcdStoreRecordRangeBounds(t *testing.T) {
	t.Parallel()
	t.Run("record far above", func(t *testing.T) {
		t.Parallel()
		f, s := openUnwatchedFakeStore(t)
		f.Put("/p/categories/0000000000000000050", []byte(`{"id":50,"name":"cat"}`))
		first := f.Txns()
		if c := mustStoreCreate(t, s, "dog"); c.ID != 1 {
			t.Errorf("dog: got id %d, want 1", c.ID)
		}
		if n := f.Txns() - first; n != 1 {
			t.Errorf("txns: got %d, want 1", n)
		}
	})
	t.Run("record at the largest id", func(t *testing.T) {
		t.Parallel()
		f, s := openUnwatchedFakeStore(t, func(o *Options) { o.MaxCategories = math.MaxInt64 })
		f.Put("/p/counter", []byte(strconv.FormatInt(math.MaxInt64-1, 10)))
		wantRefusedOver(t, f, s, "dog", math.MaxInt64, "cat")
	})
}

// Only the key petstore writes for an id is that id's record key: 19
// digits, no sign.
func TestEtcdKeysIDOf(t *testing.T) {
	t.Parallel()
	keys := newEtcdKeys("p")
	for key, want := range map[string]int64{
		"/p/categories/0000000000000000005":  5,
		"/p/categories/9223372036854775807":  math.MaxInt64,
		"/p/categories/+000000000000000005":  0,
		"/p/categories/-000000000000000005":  0,
		"/p/categories/0000000000000000000":  0,
		"/p/categories/00000000000000000050": 0,
		"/p/categories/000000000000000005":   0,
		"/p/categories/9223372036854775808":  0,
		"/p/categories/00000000000000000a5":  0,
		"/q/categories/0000000000000000005":  0,
	} {
		id, ok := keys.idOf([]byte(key))
		if ok != (want != 0) || id != want && ok {
			t.Errorf("idOf(%s): got %d, %v; want %d", key, id, ok, want)
		}
	}
}

// A refused connection sends the request to the next endpoint.
func TestEtcdClientRotatesEndpoints(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	_, srv := etcdtest.NewFake(t, "3.4")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{dead, srv.URL}})
	mustStoreCreate(t, s, "dog")
}

// 401 (gRPC code 16): the token expired; authenticate again once.
func TestEtcdClientReauthenticates(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.4")
	f.EnableAuth("s3cret")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}, User: "svc", Password: "s3cret"})
	mustStoreCreate(t, s, "dog")
	f.ExpireTokens() // every token the store holds is refused now
	if _, err := s.Get(context.Background(), 5); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("get after expiry: got %v, want catalog.ErrNotFound (after authenticating again)", err)
	}
	if n := f.AuthCalls(); n < 2 {
		t.Errorf("authentications: got %d, want at least 2", n)
	}

	start := time.Now()
	_, err := OpenEtcd(EtcdConfig{Endpoints: []string{srv.URL}, Prefix: "p", User: "svc", Password: "wrong", StartTimeout: 5 * time.Second}, Options{Log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), `authenticating to etcd as "svc"`) || strings.Contains(err.Error(), "wrong") || time.Since(start) > time.Second {
		t.Errorf("wrong password: got %v after %v, want at once an error naming the user and not the password", err, time.Since(start))
	}
}

// A watch from a compacted revision is canceled; the store reads the
// categories again and watches on.
func TestEtcdStoreWatchCompaction(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.4")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
	mustStoreCreate(t, s, "dog")
	// Another instance's create whose event the watch cannot replay: the
	// history up to now is compacted away.
	f.Put("/p/categories/0000000000000000002", []byte(`{"id":2,"name":"cat"}`))
	f.Compact()
	srv.CloseClientConnections() // break the current watch
	want := `[{"id":1,"name":"dog"},{"id":2,"name":"cat"}]`
	deadline := time.Now().Add(5 * time.Second)
	for listString(t, s) != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling the cache, bounded
	}
	if got := listString(t, s); got != want {
		t.Fatalf("list after compaction: got %s, want %s", got, want)
	}
}

// A final refusal (4xx other than 401) fails the create with an error that
// is not an *apiError: a 500 whose detail is logged.
func TestEtcdStoreFinalRefusal(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.6")
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
	f.SetTxnFault(func(int) string { return "403" })
	_, err := s.Create(context.Background(), catalog.NewCategory{Name: "dog"})
	var ge *etcd.GatewayError
	if err == nil || errors.Is(err, catalog.ErrUnavailable) || !errors.As(err, &ge) || ge.Code != 7 {
		t.Fatalf("create: got %v, want the gateway's permission denied", err)
	}
}

// The keys of refused records a store remembers, to log each once, are
// bounded: another writer may put any number of them. Past the bound they
// are still counted, and one line says that no more are logged.
func TestEtcdStoreRefusedKeysBounded(t *testing.T) {
	t.Parallel()
	f, srv := etcdtest.NewFake(t, "3.4")
	const n = etcdRefusedKept + 100
	for id := 1; id <= n; id++ {
		f.Put(fmt.Sprintf("/p/categories/%019d", id), []byte("not a category"))
	}
	var logs lockedBuffer
	s, err := OpenEtcd(EtcdConfig{Endpoints: []string{srv.URL}, Prefix: "p", StartTimeout: 5 * time.Second},
		Options{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("OpenEtcd: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if got := s.RecordsRefused(); got != n {
		t.Errorf("records refused: got %d, want %d", got, n)
	}
	s.refusedMu.Lock()
	kept := len(s.refused)
	s.refusedMu.Unlock()
	if kept > etcdRefusedKept {
		t.Errorf("the store remembers %d refused keys, want at most %d", kept, etcdRefusedKept)
	}
	out := logs.String()
	if got := strings.Count(out, "is not a valid category"); got != etcdRefusedKept {
		t.Errorf("%d refused records logged, want %d", got, etcdRefusedKept)
	}
	if got := strings.Count(out, "further ones are counted"); got != 1 {
		t.Errorf("the line that says no more are logged: %d times, want once", got)
	}
}

// A GET of an id just beyond the lead over the counter (what a cluster can
// commit while a counter reading is fresh) costs etcd no read;
// one just within it is read through (the id may be another instance's
// create that the watch has not brought yet).
func TestEtcdGetIDLead(t *testing.T) {
	t.Parallel()
	f, _ := etcdtest.NewFake(t, "3.4")
	var reads atomic.Int32 // reads of one category key
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in etcd.RangeRequest
		if r.URL.Path == "/v3/kv/range" && json.Unmarshal(body, &in) == nil &&
			len(in.RangeEnd) == 0 && strings.Contains(string(in.Key), "/categories/") {
			reads.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
	mustStoreCreate(t, s, "dog") // the counter and the cache's last id are 1
	const (
		n          = 20
		lead int64 = 240_000 // creates a cluster can commit while a counter reading is fresh
	)
	for id := 1 + lead + 1; id <= 1+lead+n; id++ {
		if _, err := s.Get(context.Background(), id); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("get %d: got %v, want catalog.ErrNotFound", id, err)
		}
	}
	if got := reads.Load(); got != 0 {
		t.Errorf("%d GETs of ids beyond the lead made %d reads of etcd, want none", n, got)
	}
	for id := 1 + lead - n + 1; id <= 1+lead; id++ {
		if _, err := s.Get(context.Background(), id); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("get %d: got %v, want catalog.ErrNotFound", id, err)
		}
	}
	if got := reads.Load(); got != n {
		t.Errorf("%d GETs of ids within the lead made %d reads of etcd, want %d", n, got, n)
	}
}

// Concurrent GETs of one id the cache does not have share one read of
// etcd. The fake gateway holds that read until all the GETs would have sent
// theirs, or for a while.
func TestEtcdReadThroughCoalesced(t *testing.T) {
	t.Parallel()
	f, _ := etcdtest.NewFake(t, "3.4")
	key := "/p/categories/0000000000000000005"
	var reads atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in etcd.RangeRequest
		if r.URL.Path == "/v3/kv/range" && json.Unmarshal(body, &in) == nil && string(in.Key) == key {
			reads.Add(1)
			<-release
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
	f.Put(key, []byte(`{"id":5,"name":"elsewhere"}`))

	const n = 20
	var wg sync.WaitGroup
	bodies := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := s.Get(context.Background(), 5)
			bodies <- fmt.Sprint(string(body), err)
		}()
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for reads.Load() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	close(release)
	wg.Wait()
	close(bodies)
	for b := range bodies {
		if b != `{"id":5,"name":"elsewhere"}<nil>` {
			t.Errorf("a GET got %s", b)
		}
	}
	if got := reads.Load(); got != 1 {
		t.Errorf("%d concurrent GETs of id 5 made %d reads of etcd, want 1", n, got)
	}
}

// The etcd configuration shows no password, however it is printed or
// logged.
func TestEtcdConfigHidesPassword(t *testing.T) {
	cfg := EtcdConfig{Endpoints: []string{"https://h1:2379"}, Prefix: "p", User: "svc", Password: "s3cret", StartTimeout: time.Second}
	var logs strings.Builder
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "etcd", cfg)
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), logs.String()} {
		if strings.Contains(out, "s3cret") || !strings.Contains(out, "svc") {
			t.Errorf("got %s, want the user and no password", out)
		}
	}
	if got, want := cfg.String(), "etcd https://h1:2379 as svc, prefix /p/"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
}
