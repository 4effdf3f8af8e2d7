package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestI64DecodesStringsAndNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{`"42"`, 42}, {`42`, 42}, {`null`, 0}, {`"18446744073709551615"`, -1}, {`"-3"`, -3}} {
		var n Int64
		if err := json.Unmarshal([]byte(tc.in), &n); err != nil || int64(n) != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.in, n, err, tc.want)
		}
	}
	var n Int64
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
			if e.Code != tc.code || e.Message != tc.message || e.Transient() != tc.transient {
				t.Errorf("got code %d message %q transient %v; want %d %q %v", e.Code, e.Message, e.Transient(), tc.code, tc.message, tc.transient)
			}
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"c/": "c0", "/p/categories/": "/p/categories0", "a\xff": "b", "\xff\xff": "\x00"} {
		if got := string(PrefixEnd([]byte(in))); got != want {
			t.Errorf("PrefixEnd(%q): got %q, want %q", in, got, want)
		}
	}
}

// The request shapes: etcd silently ignores unknown members, so a typo in
// one would turn a prefix read into a single-key read. Pin the names.
func TestEtcdRequestShapes(t *testing.T) {
	zero, rev := int64(0), int64(7)
	got, _ := json.Marshal(TxnRequest{
		Compare: []Compare{
			{Target: "MOD", Result: "EQUAL", Key: []byte("/p/counter"), ModRevision: &rev},
			{Target: "CREATE", Result: "EQUAL", Key: []byte("/p/names/a"), CreateRevision: &zero},
		},
		Success: []Op{{RequestPut: &PutRequest{Key: []byte("k"), Value: []byte("v")}}},
		Failure: []Op{{RequestRange: &RangeRequest{Key: []byte("/p/c/"), RangeEnd: []byte("/p/c0"), Limit: 10, Revision: 3}}},
	})
	want := `{"compare":[{"target":"MOD","result":"EQUAL","key":"L3AvY291bnRlcg==","mod_revision":7},` +
		`{"target":"CREATE","result":"EQUAL","key":"L3AvbmFtZXMvYQ==","create_revision":0}],` +
		`"success":[{"request_put":{"key":"aw==","value":"dg=="}}],` +
		`"failure":[{"request_range":{"key":"L3AvYy8=","range_end":"L3AvYzA=","limit":10,"revision":3}}]}`
	if string(got) != want {
		t.Errorf("txn request:\ngot  %s\nwant %s", got, want)
	}
}

// The password is in no text made of a Config: not its String, not %v or
// %#v, not a log line.
func TestConfigHidesThePassword(t *testing.T) {
	cfg := Config{Endpoints: []string{"http://h1:2379", "http://h2:2379"}, CAFile: "/etc/ca.pem", User: "svc", Password: "s3cret"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("etcd", "config", cfg)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("etcd", "config", cfg)
	for _, text := range []string{cfg.String(), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg), buf.String()} {
		if strings.Contains(text, "s3cret") {
			t.Errorf("%q shows the password", text)
		}
		if !strings.Contains(text, "http://h2:2379") || !strings.Contains(text, "svc") {
			t.Errorf("%q lacks the endpoints or the user", text)
		}
	}
}

// Backoff doubles from First to Max, starts again at First after Reset,
// and stops waiting when ctx is done.
func TestBackoff(t *testing.T) {
	b := Backoff{First: time.Millisecond, Max: 4 * time.Millisecond}
	for i, want := range []time.Duration{2, 4, 4} {
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if b.next != want*time.Millisecond {
			t.Errorf("after wait %d: next pause %v, want %v", i+1, b.next, want*time.Millisecond)
		}
	}
	b.Reset()
	if b.Wait(context.Background()); b.next != 2*time.Millisecond {
		t.Errorf("after Reset and a wait: next pause %v, want 2ms", b.next)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	long := Backoff{First: time.Hour, Max: time.Hour}
	if err := long.Wait(ctx); err != context.Canceled {
		t.Errorf("Wait on a done ctx: got %v, want context.Canceled", err)
	}
}

// A txn of ranges only is a read: an endpoint that answers 503 sends it on
// to the next, where a txn that may put has an unknown outcome. A ReadTxn
// with a put is refused before anything is sent.
func TestReadTxnIsARead(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"etcdserver: request timed out","message":"etcdserver: request timed out","code":14}`)
			return
		}
		io.WriteString(w, `{"header":{"revision":"7"},"succeeded":true,"responses":[{"response_range":{"header":{"revision":"7"}}}]}`)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{Endpoints: []string{srv.URL, srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := context.Background()
	read := &TxnRequest{Success: []Op{{RequestRange: &RangeRequest{Key: []byte("/p/counter")}}}}

	resp, err := c.ReadTxn(ctx, read)
	if err != nil || len(resp.Responses) != 1 || resp.Responses[0].ResponseRange == nil {
		t.Fatalf("ReadTxn after a 503: got %+v, %v; want the range", resp, err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("requests: got %d, want 2 (the 503, then the next endpoint)", n)
	}
	if _, err := c.Txn(ctx, read); !errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("Txn answered 503: got %v, want %v", err, ErrUnknownOutcome)
	}
	put := []Op{{RequestPut: &PutRequest{Key: []byte("k"), Value: []byte("v")}}}
	before := calls.Load()
	for _, t1 := range []*TxnRequest{{Success: put}, {Failure: put}} {
		if _, err := c.ReadTxn(ctx, t1); err == nil {
			t.Errorf("ReadTxn with a put (success %d ops, failure %d): got no error", len(t1.Success), len(t1.Failure))
		}
	}
	if n := calls.Load() - before; n != 0 {
		t.Errorf("ReadTxn with a put sent %d requests, want 0", n)
	}
}
