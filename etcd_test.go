package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Unit tests of the etcd client and store against a fake JSON gateway
// (httptest): the shapes etcd 3.4 and 3.6 write (int64 as strings, zero
// values omitted, their different error bodies, watch lines), and faults a
// real cluster cannot be made to show on cue (a txn applied whose answer is
// a 503). The real cluster is in etcd_cluster_test.go.

func TestI64DecodesStringsAndNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{`"42"`, 42}, {`42`, 42}, {`null`, 0}, {`"18446744073709551615"`, -1}, {`"-3"`, -3}} {
		var n i64
		if err := json.Unmarshal([]byte(tc.in), &n); err != nil || int64(n) != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.in, n, err, tc.want)
		}
	}
	var n i64
	if err := json.Unmarshal([]byte(`"x1"`), &n); err == nil {
		t.Errorf(`"x1": decoded as %d, want an error`, n)
	}
}

func TestDecodeGatewayError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		code      int
		message   string
		transient bool
	}{
		{"3.4", 503, `{"error":"etcdserver: request timed out","message":"etcdserver: request timed out","code":14}`, 14, "etcdserver: request timed out", true},
		{"3.5", 400, `{"error":"etcdserver: duplicate key given in txn request","code":3,"message":"etcdserver: duplicate key given in txn request"}`, 3, "etcdserver: duplicate key given in txn request", false},
		{"3.6", 400, "{\n  \"code\": 11,\n  \"message\": \"etcdserver: mvcc: required revision has been compacted\"\n}", 11, "etcdserver: mvcc: required revision has been compacted", false},
		{"3.6 timeout", 504, `{"code":4,"message":"context deadline exceeded"}`, 4, "context deadline exceeded", true},
		{"unauthenticated", 401, `{"error":"etcdserver: invalid auth token","message":"etcdserver: invalid auth token","code":16}`, 16, "etcdserver: invalid auth token", false},
		{"watch 3.4", 200, `{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}}`, 14, "etcdserver: no leader", true},
		{"not JSON", 502, "Bad Gateway\n", 0, "Bad Gateway", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := decodeGatewayError(tc.status, []byte(tc.body))
			if e.code != tc.code || e.message != tc.message || e.transient() != tc.transient {
				t.Errorf("got code %d message %q transient %v; want %d %q %v", e.code, e.message, e.transient(), tc.code, tc.message, tc.transient)
			}
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"c/": "c0", "/p/categories/": "/p/categories0", "a\xff": "b", "\xff\xff": "\x00"} {
		if got := string(prefixEnd([]byte(in))); got != want {
			t.Errorf("prefixEnd(%q): got %q, want %q", in, got, want)
		}
	}
}

// The request shapes: etcd silently ignores unknown members, so a typo in
// one would turn a prefix read into a single-key read. Pin the names.
func TestEtcdRequestShapes(t *testing.T) {
	zero, rev := int64(0), int64(7)
	got, _ := json.Marshal(txnRequest{
		Compare: []etcdCompare{
			{Target: "MOD", Result: "EQUAL", Key: []byte("/p/counter"), ModRevision: &rev},
			{Target: "CREATE", Result: "EQUAL", Key: []byte("/p/names/a"), CreateRevision: &zero},
		},
		Success: []etcdOp{{RequestPut: &putRequest{Key: []byte("k"), Value: []byte("v")}}},
		Failure: []etcdOp{{RequestRange: &rangeRequest{Key: []byte("/p/c/"), RangeEnd: []byte("/p/c0"), Limit: 10, Revision: 3}}},
	})
	want := `{"compare":[{"target":"MOD","result":"EQUAL","key":"L3AvY291bnRlcg==","mod_revision":7},` +
		`{"target":"CREATE","result":"EQUAL","key":"L3AvbmFtZXMvYQ==","create_revision":0}],` +
		`"success":[{"request_put":{"key":"aw==","value":"dg=="}}],` +
		`"failure":[{"request_range":{"key":"L3AvYy8=","range_end":"L3AvYzA=","limit":10,"revision":3}}]}`
	if string(got) != want {
		t.Errorf("txn request:\ngot  %s\nwant %s", got, want)
	}
}

// fakeEtcd is a JSON gateway over a map, enough for the store: range, txn
// (MOD and CREATE compares), watch, authenticate. It writes 3.4's shapes,
// or 3.6's (indented, other error bodies) when style is "3.6".
type fakeEtcd struct {
	t     *testing.T
	style string

	mu        sync.Mutex
	rev       int64
	kvs       map[string]*fakeKV
	events    []fakeEvent // every put, in revision order
	compacted int64       // watches from this revision or before are canceled
	changed   chan struct{}

	// txnFault, when set, is asked before each txn: "apply-then-503"
	// applies it and answers 503; "503" answers 503 without applying;
	// "403" refuses it.
	txnFault  func(n int) string
	txns      int
	password  string // non-empty: auth is on
	token     string // the valid token
	authCalls int
}

type fakeKV struct {
	value            []byte
	create, mod, ver int64
}

type fakeEvent struct {
	key string
	kv  fakeKV
}

func newFakeEtcd(t *testing.T, style string) (*fakeEtcd, *httptest.Server) {
	f := &fakeEtcd{t: t, style: style, rev: 1, kvs: map[string]*fakeKV{}, changed: make(chan struct{})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeEtcd) header() map[string]any {
	return map[string]any{"cluster_id": "14841639068965178418", "member_id": "10276657743932975437", "revision": strconv.FormatInt(f.rev, 10), "raft_term": "2"}
}

func (f *fakeEtcd) kvJSON(key string, kv *fakeKV) map[string]any {
	return map[string]any{"key": []byte(key), "value": kv.value, "create_revision": strconv.FormatInt(kv.create, 10),
		"mod_revision": strconv.FormatInt(kv.mod, 10), "version": strconv.FormatInt(kv.ver, 10)}
}

func (f *fakeEtcd) write(w http.ResponseWriter, status int, v any) {
	var b []byte
	if f.style == "3.6" {
		b, _ = json.MarshalIndent(v, "", "  ")
	} else {
		b, _ = json.Marshal(v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func (f *fakeEtcd) fail(w http.ResponseWriter, status, code int, msg string) {
	if f.style == "3.6" {
		f.write(w, status, map[string]any{"code": code, "message": msg})
		return
	}
	f.write(w, status, map[string]any{"error": msg, "message": msg, "code": code})
}

// rangeLocked answers a range; zero values omitted, as etcd does.
func (f *fakeEtcd) rangeLocked(r rangeRequest) map[string]any {
	var keys []string
	for k := range f.kvs {
		if k == string(r.Key) || len(r.RangeEnd) > 0 && k >= string(r.Key) && k < string(r.RangeEnd) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := map[string]any{"header": f.header()}
	if len(keys) > 0 {
		out["count"] = strconv.Itoa(len(keys))
	}
	if r.Limit > 0 && int64(len(keys)) > r.Limit {
		keys, out["more"] = keys[:r.Limit], true
	}
	if !r.CountOnly && len(keys) > 0 {
		var kvs []any
		for _, k := range keys {
			kvs = append(kvs, f.kvJSON(k, f.kvs[k]))
		}
		out["kvs"] = kvs
	}
	return out
}

func (f *fakeEtcd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" {
		f.fail(w, 405, 12, "method not allowed")
		return
	}
	if r.URL.Path == "/v3/watch" {
		f.serveWatch(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/v3/auth/authenticate" {
		var in struct{ Name, Password string }
		json.Unmarshal(body, &in)
		f.authCalls++
		if in.Password != f.password {
			f.fail(w, 400, 3, "etcdserver: authentication failed, invalid user ID or password")
			return
		}
		f.token = fmt.Sprintf("tok%d", f.authCalls)
		f.write(w, 200, map[string]any{"header": f.header(), "token": f.token})
		return
	}
	if f.password != "" && r.Header.Get("Authorization") != f.token {
		f.fail(w, 401, 16, "etcdserver: invalid auth token")
		return
	}
	switch r.URL.Path {
	case "/v3/kv/range":
		var in rangeRequest
		if err := json.Unmarshal(body, &in); err != nil {
			f.fail(w, 400, 3, err.Error())
			return
		}
		f.write(w, 200, f.rangeLocked(in))
	case "/v3/kv/txn":
		var in txnRequest
		if err := json.Unmarshal(body, &in); err != nil {
			f.fail(w, 400, 3, err.Error())
			return
		}
		f.txns++
		fault := ""
		if f.txnFault != nil {
			fault = f.txnFault(f.txns)
		}
		switch fault {
		case "503":
			f.fail(w, 503, 14, "etcdserver: request timed out")
			return
		case "403":
			f.fail(w, 403, 7, "etcdserver: permission denied")
			return
		}
		out := f.txnLocked(in)
		if fault == "apply-then-503" {
			f.fail(w, 503, 14, "etcdserver: request timed out")
			return
		}
		f.write(w, 200, out)
	default:
		f.fail(w, 404, 5, "Not Found")
	}
}

func (f *fakeEtcd) txnLocked(in txnRequest) map[string]any {
	ok := true
	for _, c := range in.Compare {
		kv := f.kvs[string(c.Key)]
		var got int64
		var want *int64
		switch c.Target {
		case "MOD":
			want = c.ModRevision
			if kv != nil {
				got = kv.mod
			}
		case "CREATE":
			want = c.CreateRevision
			if kv != nil {
				got = kv.create
			}
		default:
			f.t.Errorf("fake etcd: compare target %q not supported", c.Target)
		}
		if c.Result != "EQUAL" || want == nil {
			f.t.Errorf("fake etcd: compare %+v not supported", c)
		}
		if want == nil || got != *want {
			ok = false
		}
	}
	ops := in.Failure
	if ok {
		ops = in.Success
		f.rev++
	}
	var responses []any
	for _, op := range ops {
		switch {
		case op.RequestPut != nil:
			k := string(op.RequestPut.Key)
			kv := f.kvs[k]
			if kv == nil {
				kv = &fakeKV{create: f.rev}
				f.kvs[k] = kv
			}
			kv.value, kv.mod = op.RequestPut.Value, f.rev
			kv.ver++
			f.events = append(f.events, fakeEvent{key: k, kv: *kv})
			responses = append(responses, map[string]any{"response_put": map[string]any{"header": f.header()}})
		case op.RequestRange != nil:
			responses = append(responses, map[string]any{"response_range": f.rangeLocked(*op.RequestRange)})
		}
	}
	if ok {
		close(f.changed)
		f.changed = make(chan struct{})
	}
	out := map[string]any{"header": f.header(), "responses": responses}
	if ok {
		out["succeeded"] = true // absent when false
	}
	return out
}

// serveWatch streams {"result":…} lines: created, then the events of the
// watched range from start_revision on, as they happen.
func (f *fakeEtcd) serveWatch(w http.ResponseWriter, r *http.Request) {
	var in struct {
		CreateRequest struct {
			Key           []byte `json:"key"`
			RangeEnd      []byte `json:"range_end"`
			StartRevision int64  `json:"start_revision"`
		} `json:"create_request"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		f.fail(w, 400, 3, err.Error())
		return
	}
	if r.Header.Get("Grpc-Metadata-hasleader") != "true" {
		f.t.Errorf("watch without Grpc-Metadata-hasleader: true")
	}
	cr := in.CreateRequest
	flusher := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	line := func(v any) {
		b, _ := json.Marshal(map[string]any{"result": v})
		w.Write(append(b, '\n'))
		flusher.Flush()
	}
	f.mu.Lock()
	line(map[string]any{"header": f.header(), "watch_id": "0", "created": true})
	if cr.StartRevision <= f.compacted {
		line(map[string]any{"header": f.header(), "canceled": true, "compact_revision": strconv.FormatInt(f.compacted+1, 10)})
		f.mu.Unlock()
		return
	}
	next := cr.StartRevision
	for {
		var events []any
		for _, e := range f.events {
			if e.kv.mod >= next && e.key >= string(cr.Key) && e.key < string(cr.RangeEnd) {
				events = append(events, map[string]any{"kv": f.kvJSON(e.key, &e.kv)}) // a put: no "type"
			}
		}
		if len(events) > 0 {
			line(map[string]any{"header": f.header(), "events": events})
		}
		next = f.rev + 1
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		}
		f.mu.Lock()
	}
}

// openFakeStore opens an etcd store on the given endpoints.
func openFakeStore(t *testing.T, cfg etcdConfig) *etcdStore {
	t.Helper()
	if cfg.prefix == "" {
		cfg.prefix = "p"
	}
	cfg.startTimeout = 5 * time.Second
	s, err := openEtcdStore(cfg, storeOptions{log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("openEtcdStore: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestEtcdStoreOnFakeGateway(t *testing.T) {
	for _, style := range []string{"3.4", "3.6"} {
		t.Run(style, func(t *testing.T) {
			f, srv := newFakeEtcd(t, style)
			s := openFakeStore(t, etcdConfig{endpoints: []string{srv.URL}})
			for i, name := range []string{"dog", "cat"} {
				if c := mustStoreCreate(t, s, name); c.id != int64(i+1) {
					t.Errorf("id of %q: got %d, want %d", name, c.id, i+1)
				}
			}
			_, err := s.Create(context.Background(), NewCategory{Name: "DOG"})
			var ae *apiError
			if !errors.As(err, &ae) || ae.code != codeConflict {
				t.Errorf("create DOG: got %v, want a conflict", err)
			}
			if got, want := listString(t, s), `[{"id":1,"name":"dog"},{"id":2,"name":"cat"}]`; got != want {
				t.Errorf("list: got %s, want %s", got, want)
			}
			f.mu.Lock()
			if got := string(f.kvs["/p/counter"].value); got != "2" {
				t.Errorf("counter: got %q, want 2", got)
			}
			// Another instance's create, not yet seen by the watch: Get
			// reads it through.
			f.kvs["/p/categories/0000000000000000009"] = &fakeKV{value: []byte(`{"id":9,"name":"elsewhere"}`), create: 99, mod: 99, ver: 1}
			f.mu.Unlock()
			body, err := s.Get(context.Background(), 9)
			if err != nil || string(body) != `{"id":9,"name":"elsewhere"}` {
				t.Errorf("get 9: got %s, %v", body, err)
			}
			if _, err := s.Get(context.Background(), 10); !errors.Is(err, errNotFound) {
				t.Errorf("get 10: got %v, want errNotFound", err)
			}
		})
	}
}

// A txn that etcd applied but answered 503 is settled by sending it again:
// its failure branch shows our tokens, so the create answers 201 with the
// id it got, and nothing is stored twice.
func TestEtcdStoreSettlesUnknownOutcome(t *testing.T) {
	for _, fault := range []string{"apply-then-503", "503"} {
		t.Run(fault, func(t *testing.T) {
			f, srv := newFakeEtcd(t, "3.4")
			f.txnFault = func(n int) string {
				if n == 1 {
					return fault
				}
				return ""
			}
			s := openFakeStore(t, etcdConfig{endpoints: []string{srv.URL}})
			if c := mustStoreCreate(t, s, "dog"); c.id != 1 {
				t.Errorf("id: got %d, want 1", c.id)
			}
			mustStoreCreate(t, s, "cat")
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.txns != 3 {
				t.Errorf("txns sent: got %d, want 3 (one lost answer, its settling, the next create)", f.txns)
			}
			if got := string(f.kvs["/p/counter"].value); got != "2" {
				t.Errorf("counter: got %q, want 2", got)
			}
			if got := listString(t, s); got != `[{"id":1,"name":"dog"},{"id":2,"name":"cat"}]` {
				t.Errorf("list: got %s", got)
			}
		})
	}
}

// A create that loses the race for its name to another instance is a 409;
// the others of its batch are retried with the counter the failure branch
// brought, without another read.
func TestEtcdStoreLostRace(t *testing.T) {
	f, srv := newFakeEtcd(t, "3.6")
	s := openFakeStore(t, etcdConfig{endpoints: []string{srv.URL}})
	f.mu.Lock() // another instance created "dog" as id 1
	f.rev++
	f.kvs["/p/counter"] = &fakeKV{value: []byte("1"), create: f.rev, mod: f.rev, ver: 1}
	f.kvs["/p/names/dog"] = &fakeKV{value: []byte(`{"id":1,"token":"other"}`), create: f.rev, mod: f.rev, ver: 1}
	f.kvs["/p/categories/0000000000000000001"] = &fakeKV{value: []byte(`{"id":1,"name":"Dog"}`), create: f.rev, mod: f.rev, ver: 1}
	f.mu.Unlock()
	_, err := s.Create(context.Background(), NewCategory{Name: "dog"})
	var ae *apiError
	if !errors.As(err, &ae) || ae.code != codeConflict {
		t.Fatalf("create dog: got %v, want a conflict", err)
	}
	if c := mustStoreCreate(t, s, "cat"); c.id != 2 {
		t.Errorf("cat: got id %d, want 2", c.id)
	}
}

// A refused connection sends the request to the next endpoint.
func TestEtcdClientRotatesEndpoints(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	_, srv := newFakeEtcd(t, "3.4")
	s := openFakeStore(t, etcdConfig{endpoints: []string{dead, srv.URL}})
	mustStoreCreate(t, s, "dog")
}

// 401 (gRPC code 16): the token expired; authenticate again once.
func TestEtcdClientReauthenticates(t *testing.T) {
	f, srv := newFakeEtcd(t, "3.4")
	f.password = "s3cret"
	s := openFakeStore(t, etcdConfig{endpoints: []string{srv.URL}, user: "svc", password: "s3cret"})
	mustStoreCreate(t, s, "dog")
	f.mu.Lock()
	f.token = "expired-everyone" // every token the store holds is refused now
	f.mu.Unlock()
	if _, err := s.Get(context.Background(), 5); !errors.Is(err, errNotFound) {
		t.Fatalf("get after expiry: got %v, want errNotFound (after authenticating again)", err)
	}
	f.mu.Lock()
	if f.authCalls < 2 {
		t.Errorf("authentications: got %d, want at least 2", f.authCalls)
	}
	f.mu.Unlock()

	start := time.Now()
	_, err := openEtcdStore(etcdConfig{endpoints: []string{srv.URL}, prefix: "p", user: "svc", password: "wrong", startTimeout: 5 * time.Second}, storeOptions{log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), `authenticating to etcd as "svc"`) || strings.Contains(err.Error(), "wrong") || time.Since(start) > time.Second {
		t.Errorf("wrong password: got %v after %v, want at once an error naming the user and not the password", err, time.Since(start))
	}
}

// A watch from a compacted revision is canceled; the store reads the
// categories again and watches on.
func TestEtcdStoreWatchCompaction(t *testing.T) {
	f, srv := newFakeEtcd(t, "3.4")
	s := openFakeStore(t, etcdConfig{endpoints: []string{srv.URL}})
	mustStoreCreate(t, s, "dog")
	// Another instance's create whose event the watch cannot replay: the
	// history up to now is compacted away.
	f.mu.Lock()
	f.rev++
	f.kvs["/p/categories/0000000000000000002"] = &fakeKV{value: []byte(`{"id":2,"name":"cat"}`), create: f.rev, mod: f.rev, ver: 1}
	f.compacted = f.rev
	f.mu.Unlock()
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
	f, srv := newFakeEtcd(t, "3.6")
	s := openFakeStore(t, etcdConfig{endpoints: []string{srv.URL}})
	f.mu.Lock()
	f.txnFault = func(int) string { return "403" }
	f.mu.Unlock()
	_, err := s.Create(context.Background(), NewCategory{Name: "dog"})
	var ae *apiError
	var ge *gatewayError
	if err == nil || errors.As(err, &ae) || !errors.As(err, &ge) || ge.code != 7 {
		t.Fatalf("create: got %v, want the gateway's permission denied", err)
	}
}

func TestEtcdConfig(t *testing.T) {
	pwFile := t.TempDir() + "/pw"
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cfg, err := loadEtcdConfig(env("PETSTORE_ETCD_USER", "svc", "PETSTORE_ETCD_PASSWORD_FILE", pwFile, "PETSTORE_ETCD_START_TIMEOUT", "5s"),
		"etcds://h1:2379,[::1]:2379/a/b/")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.endpoints, ","); got != "https://h1:2379,https://[::1]:2379" || cfg.prefix != "a/b" ||
		cfg.user != "svc" || cfg.password != "s3cret" || cfg.startTimeout != 5*time.Second {
		t.Errorf("got endpoints %s prefix %q user %q timeout %v", got, cfg.prefix, cfg.user, cfg.startTimeout)
	}
	if cfg, _ := loadEtcdConfig(env(), "etcd://h:1"); cfg.prefix != "petstore" || cfg.startTimeout != 30*time.Second {
		t.Errorf("defaults: got prefix %q timeout %v", cfg.prefix, cfg.startTimeout)
	}
	for _, tc := range []struct {
		data     string
		env      []string
		variable string
	}{
		{"etcd://h1", nil, "PETSTORE_DATA"},
		{"etcd://h1:x", nil, "PETSTORE_DATA"},
		{"etcd://user:pw@h1:2379", nil, "PETSTORE_DATA"},
		{"etcd://h1:2379/a//b", nil, "PETSTORE_DATA"},
		{"etcd://h1:2379/a b", nil, "PETSTORE_DATA"},
		{"etcd://h1:2379,", nil, "PETSTORE_DATA"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_START_TIMEOUT", "30"}, "PETSTORE_ETCD_START_TIMEOUT"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_START_TIMEOUT", "-1s"}, "PETSTORE_ETCD_START_TIMEOUT"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_USER", "svc"}, "PETSTORE_ETCD_PASSWORD_FILE"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_PASSWORD_FILE", pwFile}, "PETSTORE_ETCD_USER"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_USER", "svc", "PETSTORE_ETCD_PASSWORD_FILE", pwFile + ".missing"}, "PETSTORE_ETCD_PASSWORD_FILE"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_CA_FILE", pwFile}, "PETSTORE_ETCD_CA_FILE"},
	} {
		_, err := loadConfig(env(append([]string{"PETSTORE_DATA", tc.data}, tc.env...)...))
		if err == nil || !strings.Contains(err.Error(), tc.variable) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %v: got %v, want one line naming %s", tc.data, tc.env, err, tc.variable)
		}
	}
}

// Start waits at most PETSTORE_ETCD_START_TIMEOUT for the cluster, then
// fails with one line naming the endpoints.
func TestEtcdStartTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_API_KEYS": e2eKey,
		"PETSTORE_DATA": "etcd://" + addr + "/p", "PETSTORE_ETCD_START_TIMEOUT": "300ms"}
	start := time.Now()
	err = run(t.Context(), []string{"petstore"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "PETSTORE_ETCD_START_TIMEOUT") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want one line naming %s and PETSTORE_ETCD_START_TIMEOUT", err, addr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("start gave up after %v, want about 300ms", d)
	}
}
