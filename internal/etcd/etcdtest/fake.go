package etcdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"

	"petstore/internal/etcd"
)

// Fake is an etcd JSON gateway over a map, enough for petstore: range, txn
// (MOD and CREATE compares, of a key or a range), watch, lease grant,
// authenticate. It writes 3.4's shapes, or 3.6's (indented, other error
// bodies) when style is "3.6".
type Fake struct {
	t     testing.TB
	style string

	mu        sync.Mutex
	rev       int64
	kvs       map[string]*kv
	events    []event // every put, in revision order
	compacted int64   // watches from this revision or before are canceled
	changed   chan struct{}

	// txnFault, when set, is asked before each txn: "apply-then-503"
	// applies it and answers 503; "503" answers 503 without applying;
	// "403" refuses it.
	txnFault  func(n int) string
	txns      int
	lose      bool   // carry out unary calls, and answer them 503 (see LoseAnswers)
	leases    int    // leases granted
	watches   gate   // frozen: watch streams send nothing (see HoldWatches)
	password  string // non-empty: auth is on
	token     string // the valid token
	authCalls int
}

type kv struct {
	value            []byte
	create, mod, ver int64
}

type event struct {
	key string
	kv  kv
}

// NewFake starts a fake gateway on 127.0.0.1, answering as etcd 3.4 does, or
// as 3.6 does when style is "3.6"; it stops at the end of the test.
func NewFake(t testing.TB, style string) (*Fake, *httptest.Server) {
	f := &Fake{t: t, style: style, rev: 1, kvs: map[string]*kv{}, changed: make(chan struct{})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *Fake) header() map[string]any {
	return map[string]any{"cluster_id": "14841639068965178418", "member_id": "10276657743932975437", "revision": strconv.FormatInt(f.rev, 10), "raft_term": "2"}
}

func (f *Fake) kvJSON(key string, kv *kv) map[string]any {
	return map[string]any{"key": []byte(key), "value": kv.value, "create_revision": strconv.FormatInt(kv.create, 10),
		"mod_revision": strconv.FormatInt(kv.mod, 10), "version": strconv.FormatInt(kv.ver, 10)}
}

func (f *Fake) write(w http.ResponseWriter, status int, v any) {
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

func (f *Fake) fail(w http.ResponseWriter, status, code int, msg string) {
	if f.style == "3.6" {
		f.write(w, status, map[string]any{"code": code, "message": msg})
		return
	}
	f.write(w, status, map[string]any{"error": msg, "message": msg, "code": code})
}

// inRange reports whether k is among the keys a request of key and
// range_end names, as etcd reads them: key alone without a range_end;
// with one, [key, range_end), every key from key on for "\x00", and none
// when range_end is not above key.
func inRange(k string, key, end []byte) bool {
	switch {
	case len(end) == 0:
		return k == string(key)
	case string(end) == "\x00":
		return k >= string(key)
	}
	return k >= string(key) && k < string(end)
}

// rangeLocked answers a range; zero values omitted, as etcd does.
func (f *Fake) rangeLocked(r etcd.RangeRequest) map[string]any {
	var keys []string
	for k := range f.kvs {
		if inRange(k, r.Key, r.RangeEnd) {
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

// ServeHTTP answers one gateway call: POST /v3/... with a JSON body.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.serve(w, r, nil) }

// serve answers one gateway call as member m (nil: the fake's own server).
func (f *Fake) serve(w http.ResponseWriter, r *http.Request, m *FakeMember) {
	if r.Method != "POST" {
		f.fail(w, 405, 12, "method not allowed")
		return
	}
	if r.URL.Path == "/v3/watch" {
		f.serveWatch(w, r, m)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose {
		// Carried out, and the answer lost: the client sees what a
		// member that timed out sends.
		f.serveLocked(httptest.NewRecorder(), r, body)
		f.fail(w, 503, 14, "etcdserver: request timed out")
		return
	}
	f.serveLocked(w, r, body)
}

// serveLocked answers a unary call; f.mu is held.
func (f *Fake) serveLocked(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.URL.Path == "/v3/auth/authenticate" {
		f.authenticateLocked(w, body)
		return
	}
	if f.password != "" && r.Header.Get("Authorization") != f.token {
		f.fail(w, 401, 16, "etcdserver: invalid auth token")
		return
	}
	switch r.URL.Path {
	case "/v3/kv/range":
		var in etcd.RangeRequest
		if err := json.Unmarshal(body, &in); err != nil {
			f.fail(w, 400, 3, err.Error())
			return
		}
		f.write(w, 200, f.rangeLocked(in))
	case "/v3/kv/txn":
		f.serveTxnLocked(w, body)
	case "/v3/lease/grant":
		// Leases are granted and never expire: keys put under one stay.
		f.leases++
		f.write(w, 200, map[string]any{"header": f.header(), "ID": strconv.Itoa(f.leases), "TTL": "60"})
	default:
		f.fail(w, 404, 5, "Not Found")
	}
}

// authenticateLocked answers /v3/auth/authenticate.
func (f *Fake) authenticateLocked(w http.ResponseWriter, body []byte) {
	var in struct{ Name, Password string }
	json.Unmarshal(body, &in)
	f.authCalls++
	if in.Password != f.password {
		f.fail(w, 400, 3, "etcdserver: authentication failed, invalid user ID or password")
		return
	}
	f.token = fmt.Sprintf("tok%d", f.authCalls)
	f.write(w, 200, map[string]any{"header": f.header(), "token": f.token})
}

// serveTxnLocked answers /v3/kv/txn, or fails it as txnFault says.
func (f *Fake) serveTxnLocked(w http.ResponseWriter, body []byte) {
	var in etcd.TxnRequest
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
}

func (f *Fake) txnLocked(in etcd.TxnRequest) map[string]any {
	ok := true
	for _, c := range in.Compare {
		want := c.ModRevision
		if c.Target == "CREATE" {
			want = c.CreateRevision
		}
		if c.Target != "MOD" && c.Target != "CREATE" || c.Result != "EQUAL" || want == nil {
			f.t.Errorf("fake etcd: compare %+v not supported", c)
			ok = false
			continue
		}
		// As etcd: with a range_end, every key of [key, range_end) is
		// compared, and a range with no key compares as one key absent.
		var kvs []*kv
		for k, e := range f.kvs {
			if inRange(k, c.Key, c.RangeEnd) {
				kvs = append(kvs, e)
			}
		}
		if len(kvs) == 0 {
			kvs = append(kvs, &kv{})
		}
		for _, e := range kvs {
			got := e.mod
			if c.Target == "CREATE" {
				got = e.create
			}
			ok = ok && got == *want
		}
	}
	ops := in.Failure
	if ok {
		ops = in.Success
	}
	// A txn that puts nothing makes no revision, as in etcd.
	writes := slices.ContainsFunc(ops, func(op etcd.Op) bool { return op.RequestPut != nil })
	if writes {
		f.rev++
	}
	var responses []any
	for _, op := range ops {
		switch {
		case op.RequestPut != nil:
			k := string(op.RequestPut.Key)
			e := f.kvs[k]
			if e == nil {
				e = &kv{create: f.rev}
				f.kvs[k] = e
			}
			e.value, e.mod = op.RequestPut.Value, f.rev
			e.ver++
			f.events = append(f.events, event{key: k, kv: *e})
			responses = append(responses, map[string]any{"response_put": map[string]any{"header": f.header()}})
		case op.RequestRange != nil:
			responses = append(responses, map[string]any{"response_range": f.rangeLocked(*op.RequestRange)})
		}
	}
	if writes {
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
// watched range from start_revision on, as they happen; nothing while
// member m is frozen.
func (f *Fake) serveWatch(w http.ResponseWriter, r *http.Request, m *FakeMember) {
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
			if e.kv.mod >= next && inRange(e.key, cr.Key, cr.RangeEnd) {
				events = append(events, map[string]any{"kv": f.kvJSON(e.key, &e.kv)}) // a put: no "type"
			}
		}
		header := f.header()
		next = f.rev + 1
		changed := f.changed
		f.mu.Unlock()
		if !f.watches.await(r.Context()) || m != nil && !m.await(r.Context()) {
			return
		}
		if len(events) > 0 {
			line(map[string]any{"header": header, "events": events})
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		}
		f.mu.Lock()
	}
}

// SetTxnFault makes fault decide the fate of each txn, numbered from 1:
// "apply-then-503" applies it and answers 503; "503" answers 503 without
// applying it; "403" refuses it; "" applies it.
func (f *Fake) SetTxnFault(fault func(n int) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.txnFault = fault
}

// EnableAuth turns authentication on: requests need a token that
// /v3/auth/authenticate gives for password.
func (f *Fake) EnableAuth(password string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.password = password
}

// ExpireTokens refuses every token given so far.
func (f *Fake) ExpireTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token = "expired-everyone"
}

// Put writes value at key at a new revision, as another writer would, but
// sends no watch event for it: a write the watch has not brought yet.
func (f *Fake) Put(key string, value []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rev++
	f.kvs[key] = &kv{value: value, create: f.rev, mod: f.rev, ver: 1}
}

// Compact cancels every watch from the current revision or before.
func (f *Fake) Compact() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacted = f.rev
}

// Value returns the value at key, nil when there is none.
func (f *Fake) Value(key string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v := f.kvs[key]; v != nil {
		return v.value
	}
	return nil
}

// Txns returns how many txns the fake was sent.
func (f *Fake) Txns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.txns
}

// AuthCalls returns how many authentications the fake was asked for.
func (f *Fake) AuthCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.authCalls
}

// LoseAnswers makes the fake carry out every unary call (range, txn) as
// usual and answer it 503, as a client sees a member whose answers are
// lost; watches go on. false ends it.
func (f *Fake) LoseAnswers(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose = on
}

// FakeMember is another endpoint of a fake, sharing its data, as a member
// of a cluster does: it can be frozen, as a stopped (SIGSTOP) etcd process
// is: requests wait, and its watches send nothing, until Thaw.
type FakeMember struct {
	URL string
	gate
}

// NewMember starts another endpoint of f on 127.0.0.1; it stops at the end
// of the test.
func (f *Fake) NewMember(t testing.TB) *FakeMember {
	m := &FakeMember{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.await(r.Context()) {
			f.serve(w, r, m)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(m.Thaw) // the server's Close waits for the requests it holds
	m.URL = srv.URL
	return m
}

// HoldWatches makes every watch stream of f send nothing while its
// connection stays open (a silent stream), until ReleaseWatches; unary
// calls are answered as usual.
func (f *Fake) HoldWatches() { f.watches.Freeze() }

// ReleaseWatches lets the watch streams go on.
func (f *Fake) ReleaseWatches() { f.watches.Thaw() }

// gate holds whoever awaits it while it is frozen. The zero value is open.
type gate struct {
	mu     sync.Mutex
	frozen chan struct{} // non-nil while frozen; closed when thawed
}

// Freeze closes the gate.
func (g *gate) Freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen == nil {
		g.frozen = make(chan struct{})
	}
}

// Thaw opens the gate; what waited goes on.
func (g *gate) Thaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen != nil {
		close(g.frozen)
		g.frozen = nil
	}
}

// await waits while g is frozen; it returns false if ctx ends first. A nil
// gate is never frozen.
func (g *gate) await(ctx context.Context) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	frozen := g.frozen
	g.mu.Unlock()
	if frozen == nil {
		return true
	}
	select {
	case <-frozen:
		return true
	case <-ctx.Done():
		return false
	}
}
