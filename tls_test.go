package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// A TLS configuration that cannot serve stops the start with a message
// naming the variable at fault, and never quoting the key.
func TestTLSConfigurationErrors(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	good := tlsEnv(t, ca, dir, 1)
	otherCert, otherKey := ca.issue(t, 2)
	keyPEM, err := os.ReadFile(good["PETSTORE_TLS_KEY_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		writeFileAtomic(t, path, data)
		return path
	}
	otherKeyFile := write("other-key.pem", otherKey)
	otherCertFile := write("other-cert.pem", otherCert)
	garbage := write("garbage.pem", []byte("not a certificate\n"))
	missing := filepath.Join(dir, "missing.pem")
	cases := []struct {
		name, cert, key string
		want            []string
	}{
		{"certificate alone", good["PETSTORE_TLS_CERT_FILE"], "", []string{"PETSTORE_TLS_CERT_FILE is set but PETSTORE_TLS_KEY_FILE is not"}},
		{"key alone", "", good["PETSTORE_TLS_KEY_FILE"], []string{"PETSTORE_TLS_KEY_FILE is set but PETSTORE_TLS_CERT_FILE is not"}},
		{"certificate missing", missing, good["PETSTORE_TLS_KEY_FILE"], []string{"PETSTORE_TLS_CERT_FILE:", missing}},
		{"key missing", good["PETSTORE_TLS_CERT_FILE"], missing, []string{"PETSTORE_TLS_KEY_FILE:", missing}},
		{"key of another certificate", good["PETSTORE_TLS_CERT_FILE"], otherKeyFile, []string{"PETSTORE_TLS_KEY_FILE:", otherKeyFile, "matches the certificate"}},
		{"certificate of another key", otherCertFile, good["PETSTORE_TLS_KEY_FILE"], []string{"PETSTORE_TLS_KEY_FILE:", "matches the certificate"}},
		{"not a certificate", garbage, good["PETSTORE_TLS_KEY_FILE"], []string{"PETSTORE_TLS_CERT_FILE:", garbage, "no PEM CERTIFICATE"}},
		{"files swapped", good["PETSTORE_TLS_KEY_FILE"], good["PETSTORE_TLS_CERT_FILE"], []string{"PETSTORE_TLS_CERT_FILE:", "no PEM CERTIFICATE"}},
		{"the key file for both", good["PETSTORE_TLS_KEY_FILE"], good["PETSTORE_TLS_KEY_FILE"], []string{"PETSTORE_TLS_CERT_FILE:", "no PEM CERTIFICATE"}},
		{"the certificate file for both", good["PETSTORE_TLS_CERT_FILE"], good["PETSTORE_TLS_CERT_FILE"], []string{"PETSTORE_TLS_KEY_FILE:", "no PEM private key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := baseEnv(store.MemoryPath)
			env["PETSTORE_TLS_CERT_FILE"], env["PETSTORE_TLS_KEY_FILE"] = c.cert, c.key
			stderr, err := runToError(t, []string{"petstore"}, env)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			checkNoKeyMaterial(t, err.Error()+stderr.String(), keyPEM, otherKey)
		})
	}
}

// checkNoKeyMaterial fails if text holds a line of the body of a PEM key.
func checkNoKeyMaterial(t *testing.T, text string, keys ...[]byte) {
	t.Helper()
	for _, k := range keys {
		for _, line := range strings.Split(string(k), "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(text, line) {
				t.Fatalf("key material in an error or a log")
			}
		}
	}
}

// The same requests over HTTP/1.1 and HTTP/2 get the same answers, errors
// included (status, Content-Type and Error body byte for byte); a body of
// 1 MiB + 1 is 413 over both. TLS 1.0 and 1.1 are refused, 1.2 and 1.3
// served; ALPN picks h2 when offered. The listening line says "tls".
func TestTLSServesHTTP2AndHTTP1Alike(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	env := baseEnv(store.MemoryPath)
	for k, v := range tlsEnv(t, ca, t.TempDir(), 7) {
		env[k] = v
	}
	svc := startRun(t, env)
	if !strings.Contains(svc.stderr.String(), `"msg":"listening","addr":"`+svc.addr+`","tls":true`) {
		t.Errorf("the listening line lacks \"tls\":true:\n%s", petstoretest.Redact(svc.stderr.String()))
	}
	auth := "Bearer " + e2eKey
	big := `{"name":"` + strings.Repeat("x", maxBodyBytes) + `"}`
	cases := []struct {
		name, method, path, auth, contentType, body string
		status                                      int
	}{
		{"list", "GET", "/v1/categories", auth, "", "", 200},
		{"no key", "GET", "/v1/categories", "", "", "", 401},
		{"wrong key", "GET", "/v1/categories", "Bearer wrong-key-0123456789", "", "", 401},
		{"unknown path", "GET", "/v1/nothing", auth, "", "", 404},
		{"wrong method", "DELETE", "/v1/categories", auth, "", "", 405},
		{"bad query", "GET", "/v1/categories?limt=1", auth, "", "", 400},
		{"bad JSON", "POST", "/v1/categories", auth, "application/json", `{"name":`, 400},
		{"bad field", "POST", "/v1/categories", auth, "application/json", `{"name":""}`, 400},
		{"not JSON", "POST", "/v1/categories", auth, "text/plain", `name`, 415},
		{"1 MiB + 1", "POST", "/v1/categories", auth, "application/json", big[:maxBodyBytes+1], 413},
		{"taken name", "POST", "/v1/categories", auth, "application/json", `{"name":"dogs"}`, 409},
		{"no such id", "GET", "/v1/categories/999", auth, "", "", 404},
	}
	h1, h2 := tlsClient(t, ca.roots, false), tlsClient(t, ca.roots, true)
	if status, _, _ := tlsDo(t, h2, "POST", svc.url("/v1/categories"), auth, "application/json", `{"name":"dogs"}`, 2); status != 201 {
		t.Fatalf("create over HTTP/2: got %d, want 201", status)
	}
	for _, c := range cases {
		s1, ct1, b1 := tlsDo(t, h1, c.method, svc.url(c.path), c.auth, c.contentType, c.body, 1)
		s2, ct2, b2 := tlsDo(t, h2, c.method, svc.url(c.path), c.auth, c.contentType, c.body, 2)
		if s1 != c.status || s2 != c.status {
			t.Errorf("%s: got %d over HTTP/1.1 and %d over HTTP/2, want %d", c.name, s1, s2, c.status)
		}
		if ct1 != "application/json" || ct2 != ct1 || !bytes.Equal(b1, b2) {
			t.Errorf("%s: answers differ:\nHTTP/1.1 %s %s\nHTTP/2   %s %s", c.name, ct1, b1, ct2, b2)
		}
		if c.status >= 400 {
			petstoretest.CheckErrorBody(t, s2, http.Header{"Content-Type": {ct2}}, b2)
		}
	}
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		conn, err := tls.Dial("tcp", svc.addr, &tls.Config{RootCAs: ca.roots, MinVersion: v, MaxVersion: v})
		if err == nil {
			conn.Close()
			t.Errorf("a handshake of %s succeeded; want it refused", tls.VersionName(v))
		}
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		conn, err := tls.Dial("tcp", svc.addr, &tls.Config{RootCAs: ca.roots, MinVersion: v, MaxVersion: v, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Errorf("%s refused: %v", tls.VersionName(v), err)
			continue
		}
		if got := conn.ConnectionState().NegotiatedProtocol; got != "h2" {
			t.Errorf("%s: ALPN chose %q, want h2", tls.VersionName(v), got)
		}
		conn.Close()
	}
	if strings.Contains(svc.stderr.String(), e2eKey) {
		t.Errorf("the key is in the log")
	}

	plain := startRun(t, baseEnv(store.MemoryPath))
	if !strings.Contains(plain.stderr.String(), `"tls":false`) {
		t.Errorf("the listening line of plain HTTP lacks \"tls\":false")
	}
}

// tlsDo sends one request with client, checks it went over HTTP/major, and
// returns the answer's status, Content-Type and body.
func tlsDo(t *testing.T, client *http.Client, method, url, auth, contentType, body string, major int) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s over HTTP/%d: %v", method, url, major, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s over HTTP/%d: reading the answer: %v", method, url, major, err)
	}
	if resp.ProtoMajor != major {
		t.Fatalf("%s %s: served over %s, want HTTP/%d", method, url, resp.Proto, major)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), got
}

// The pair is read again on SIGHUP and when its files change: new
// connections see the new certificate's serial. A broken pair (a key that
// does not match) is kept out, by SIGHUP and by a change alike, and the
// error names the file; the certificate in force keeps serving. The binary
// looks at the files every 100 ms (PETSTORE_FILE_POLL), not every 2 s.
func TestTLSReload(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	env := tlsEnv(t, ca, dir, 1)
	env["PETSTORE_FILE_POLL"] = "100ms"
	p := petstoretest.Start(t, env)
	if got := servedSerial(t, p.Addr, ca.roots); got != 1 {
		t.Fatalf("serial at start: got %d, want 1", got)
	}
	waitSerial := func(what string, want int64) {
		t.Helper()
		deadline := time.Now().Add(8 * time.Second)
		for servedSerial(t, p.Addr, ca.roots) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: serial %d not served within 8 s", what, want)
			}
			time.Sleep(20 * time.Millisecond) // polling new connections, bounded by deadline
		}
	}
	tlsEnv(t, ca, dir, 2)
	p.Signal(t, syscall.SIGHUP)
	waitSerial("after SIGHUP", 2)

	keyFile := filepath.Join(dir, "key.pem")
	_, strayKey := ca.issue(t, 99)
	writeFileAtomic(t, keyFile, strayKey)
	p.Signal(t, syscall.SIGHUP)
	refused := func(l petstoretest.LogLine) bool {
		return l["msg"] == "TLS certificate not reloaded; the one in force stays" && l["file"] == keyFile
	}
	if p.WaitLog(5*time.Second, refused) == nil {
		t.Fatalf("a key that does not match: no error naming %s within 5 s", keyFile)
	}
	if got := servedSerial(t, p.Addr, ca.roots); got != 2 {
		t.Fatalf("after a broken pair and SIGHUP: serial %d served, want 2 kept", got)
	}

	tlsEnv(t, ca, dir, 3) // a good pair, no signal: the change is found
	waitSerial("after the files changed", 3)
	if got, _, _ := tlsDo(t, tlsClient(t, ca.roots, true), "GET", p.URL("/v1/categories"), "Bearer "+petstoretest.Key, "", "", 2); got != 200 {
		t.Fatalf("GET over HTTP/2 after rotation: got %d", got)
	}
	keyPEM, _ := os.ReadFile(keyFile)
	checkNoKeyMaterial(t, p.Stderr.String(), keyPEM, strayKey)
	if !strings.Contains(p.Stderr.String(), `"msg":"TLS certificate reloaded","reason":"file changed"`) {
		t.Errorf("no log line of the reload by change")
	}
	p.Stop(t)
}

// One HTTP/2 connection that opens more streams than allowed, each a
// create whose body is held back, never has more than maxStreams handlers
// running: the streams beyond are refused, each with its own RST_STREAM,
// and the connection goes on. Once the bodies arrive, every stream that was
// let in is answered and created.
func TestHTTP2StreamsBounded(t *testing.T) {
	t.Parallel()
	const extra = 20
	var active, peak atomic.Int64
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := active.Add(1)
			defer active.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			next.ServeHTTP(w, r)
		})
	}
	srv := startTLSServer(t, defaultLimits, 1000, count)
	conn := dialHTTP2(t, srv.addr, srv.roots)
	frames := readFrames(conn)
	bodyOf := func(i int) string { return fmt.Sprintf(`{"name":"stream-%03d"}`, i) }
	for i := range maxStreams + extra {
		block := requestHeaders("POST", "/v1/categories", "content-type", "application/json", "content-length", fmt.Sprint(len(bodyOf(i))))
		if err := writeFrame(conn, frame{typ: frameHeaders, flags: flagEndHeaders, stream: uint32(2*i + 1), payload: block}); err != nil {
			t.Fatal(err)
		}
	}
	reset := map[uint32]bool{}
	timeout := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond) // the last handlers may start after the last frame
	defer tick.Stop()
	for len(reset) < extra || active.Load() < maxStreams {
		select {
		case <-tick.C:
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("the server closed the connection")
			}
			if f.typ == frameRSTStream {
				reset[f.stream] = true
			}
			if f.typ == frameGoAway {
				t.Fatalf("the server ended the connection (GOAWAY)")
			}
		case <-timeout:
			t.Fatalf("within 10 s: %d streams reset, %d handlers running; want %d and %d", len(reset), active.Load(), extra, maxStreams)
		}
	}
	for i := range maxStreams + extra {
		if id := uint32(2*i + 1); reset[id] != (i >= maxStreams) {
			t.Fatalf("stream %d (the %dth): reset %v", id, i+1, reset[id])
		}
	}
	for i := range maxStreams {
		if err := writeFrame(conn, frame{typ: frameData, flags: flagEndStream, stream: uint32(2*i + 1), payload: []byte(bodyOf(i))}); err != nil {
			t.Fatal(err)
		}
	}
	answered := map[uint32]bool{}
	for len(answered) < maxStreams {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("the server closed the connection after %d answers", len(answered))
			}
			if (f.typ == frameHeaders || f.typ == frameData) && f.flags&flagEndStream != 0 {
				answered[f.stream] = true
			}
		case <-timeout:
			t.Fatalf("%d of %d streams answered within 10 s", len(answered), maxStreams)
		}
	}
	if got := peak.Load(); got != maxStreams {
		t.Errorf("handlers running at once: got %d at most, want %d", got, maxStreams)
	}
	if got := len(srv.env.mustList(t)); got != maxStreams {
		t.Errorf("categories created: got %d, want %d", got, maxStreams)
	}
}

// What a client that never gets to a request can hold is bounded in time:
// a TLS handshake never started or left half-way is closed after the
// header timeout; an HTTP/2 connection whose header block never ends
// (HEADERS without END_HEADERS), after the idle timeout.
func TestTLSUnfinishedBounded(t *testing.T) {
	t.Parallel()
	lim := defaultLimits
	lim.headerTimeout, lim.idleTimeout = 300*time.Millisecond, time.Second
	srv := startTLSServer(t, lim, 1000, func(h http.Handler) http.Handler { return h })
	dial := func() net.Conn {
		conn, err := net.DialTimeout("tcp", srv.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	var wg sync.WaitGroup
	check := func(what string, conn net.Conn) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !waitServerClosed(conn, 10*time.Second) {
				t.Errorf("%s: still open after 10 s", what)
			}
		}()
	}
	check("a connection that sends nothing", dial())
	half := dial()
	half.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}) // a ClientHello's first bytes
	check("a handshake left half-way", half)

	h2 := dialHTTP2(t, srv.addr, srv.roots)
	block := requestHeaders("GET", "/v1/categories")
	writeFrame(h2, frame{typ: frameHeaders, stream: 1, payload: block}) // no END_HEADERS: the block goes on
	check("an HTTP/2 header block that never ends", h2)
	wg.Wait()
}

// A body that does not arrive within the read timeout is 408 over HTTP/2
// as over HTTP/1.1, with the Error body.
func TestHTTP2SlowBodyTimesOut(t *testing.T) {
	t.Parallel()
	lim := defaultLimits
	lim.readTimeout = 500 * time.Millisecond
	srv := startTLSServer(t, lim, 1000, func(h http.Handler) http.Handler { return h })
	client := tlsClient(t, srv.roots, true)
	r, w := io.Pipe()
	defer w.Close()
	req, err := http.NewRequest("POST", "https://"+srv.addr+"/v1/categories", r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = 20
	go w.Write([]byte(`{"name":`)) // and nothing more
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", resp.Proto)
	}
	if e, ok := petstoretest.CheckErrorBody(t, resp.StatusCode, resp.Header, got); !ok || resp.StatusCode != 408 || e.Code != "request_timeout" {
		t.Errorf("got %d %s, want 408 request_timeout", resp.StatusCode, got)
	}
}

// The connection cap holds over TLS: connections closed are counted out,
// and at the cap an idle HTTP/2 connection is closed to make room, so a new
// client is answered. Handshakes left half-way count as headers begun, so
// that hundreds of them are bounded (closed oldest first) apart from the
// cap, and a real client is answered meanwhile.
func TestTLSConnectionCap(t *testing.T) {
	t.Parallel()
	const capConns = 4
	srv := startTLSServer(t, defaultLimits, capConns, func(h http.Handler) http.Handler { return h })
	for range 3 * capConns { // each closed: none may stay counted
		servedSerial(t, srv.addr, srv.roots)
	}
	for range capConns {
		conn := dialHTTP2(t, srv.addr, srv.roots)
		readFrame(conn) // the server's SETTINGS: the connection is served, idle
	}
	client := tlsClient(t, srv.roots, true)
	if status, _, _ := tlsDo(t, client, "GET", "https://"+srv.addr+"/v1/categories", "Bearer "+testKey, "", "", 2); status != 200 {
		t.Fatalf("a new client at the cap of idle HTTP/2 connections: got %d", status)
	}
	if open := srv.conns.Open(); open > capConns {
		t.Errorf("open connections: %d, over the cap of %d", open, capConns)
	}

	big := startTLSServer(t, defaultLimits, 1000, func(h http.Handler) http.Handler { return h })
	const halfWay = 300
	for range halfWay {
		conn, err := net.DialTimeout("tcp", big.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
	}
	deadline := time.Now().Add(10 * time.Second)
	for big.conns.Open() > 256+1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open with unfinished handshakes, want at most 256", big.conns.Open())
		}
		time.Sleep(10 * time.Millisecond) // polling a count, bounded by deadline
	}
	if status, _, _ := tlsDo(t, tlsClient(t, big.roots, false), "GET", "https://"+big.addr+"/v1/categories", "Bearer "+testKey, "", "", 1); status != 200 {
		t.Fatalf("a client among unfinished handshakes: got %d", status)
	}
}

// A header block over the bound is refused over HTTP/2 as over HTTP/1.1,
// before petstore sees it: fields over the bound within one frame get Go's
// own 431; a block continued past the bound, or one field longer than the
// whole bound, ends the connection (a GOAWAY) without decoding the rest.
func TestHTTP2HeaderBlockBounded(t *testing.T) {
	t.Parallel()
	var ran atomic.Bool
	srv := startTLSServer(t, defaultLimits, 1000, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran.Store(true); h.ServeHTTP(w, r) })
	})
	fields := func(n int) []string {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf("x-pad-%02d", i), strings.Repeat("p", 1100))
		}
		return kv
	}
	goAway := func(f frame) bool { return f.typ == frameGoAway }
	for _, c := range []struct {
		name  string
		block []byte
		want  func(frame) bool
	}{
		{"12 fields of 1100 bytes in one frame", requestHeaders("GET", "/v1/categories", fields(12)...),
			func(f frame) bool { return f.typ == frameData && bytes.Contains(f.payload, []byte("HTTP Error 431")) }},
		{"16 fields of 1100 bytes, continued", requestHeaders("GET", "/v1/categories", fields(16)...), goAway},
		{"one field of 16 KiB", requestHeaders("GET", "/v1/categories", "x-pad", strings.Repeat("p", maxHeaderBlock)), goAway},
	} {
		conn := dialHTTP2(t, srv.addr, srv.roots)
		const frameMax = 16 << 10
		if len(c.block) <= frameMax {
			writeFrame(conn, frame{typ: frameHeaders, flags: flagEndStream | flagEndHeaders, stream: 1, payload: c.block})
		} else {
			writeFrame(conn, frame{typ: frameHeaders, flags: flagEndStream, stream: 1, payload: c.block[:frameMax]})
			writeFrame(conn, frame{typ: frameContinuation, flags: flagEndHeaders, stream: 1, payload: c.block[frameMax:]})
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			f, err := readFrame(conn)
			if err != nil {
				t.Fatalf("%s: the expected answer did not come: %v", c.name, err)
			}
			if c.want(f) {
				break
			}
		}
	}
	if ran.Load() {
		t.Errorf("the handler ran for a header block over the bound")
	}
}

// An answer given before a request's body is read (a 401, a 413 by its
// declared size) ends only its stream over HTTP/2: the connection, and the
// answers of other streams on it, go on. (Over HTTP/1.1 such an answer
// closes the connection, which HTTP/2 has no need to do.)
func TestHTTP2EarlyRefusalKeepsTheConnection(t *testing.T) {
	t.Parallel()
	srv := startTLSServer(t, defaultLimits, 1000, func(h http.Handler) http.Handler { return h })
	conn := dialHTTP2(t, srv.addr, srv.roots)
	frames := readFrames(conn)
	noKey := hpackLiteral(nil, ":method", "POST")
	noKey = hpackLiteral(noKey, ":scheme", "https")
	noKey = hpackLiteral(noKey, ":authority", "127.0.0.1")
	noKey = hpackLiteral(noKey, ":path", "/v1/categories")
	noKey = hpackLiteral(noKey, "content-type", "application/json")
	noKey = hpackLiteral(noKey, "content-length", "70000")
	tooBig := requestHeaders("POST", "/v1/categories", "content-type", "application/json", "content-length", "2000000")
	chunk := bytes.Repeat([]byte(" "), 16<<10)
	for _, f := range []frame{
		{typ: frameHeaders, flags: flagEndHeaders, stream: 1, payload: noKey},
		{typ: frameData, stream: 1, payload: chunk},
		{typ: frameHeaders, flags: flagEndHeaders, stream: 3, payload: tooBig},
		{typ: frameData, stream: 3, payload: chunk},
	} {
		if err := writeFrame(conn, f); err != nil {
			t.Fatal(err)
		}
	}
	bodies := readStreams(t, frames, 1, 3)
	if !strings.Contains(bodies[1], `"code":"unauthorized"`) || !strings.Contains(bodies[3], `"code":"payload_too_large"`) {
		t.Errorf("answers: stream 1 %q, stream 3 %q; want 401 unauthorized and 413 payload_too_large", bodies[1], bodies[3])
	}
	// The connection still serves.
	if err := writeFrame(conn, frame{typ: frameHeaders, flags: flagEndHeaders | flagEndStream, stream: 5, payload: requestHeaders("GET", "/healthz")}); err != nil {
		t.Fatal(err)
	}
	if bodies := readStreams(t, frames, 5); bodies[5] != `{"status":"ok"}` {
		t.Errorf("after the refusals: /healthz answered %q on the same connection", bodies[5])
	}
}

// readStreams reads frames until each of streams has ended (a frame with
// END_STREAM, or RST_STREAM after data), for at most 10 s, and returns the
// data of each; a GOAWAY or the end of the connection fails the test.
func readStreams(t *testing.T, frames <-chan frame, streams ...uint32) map[uint32]string {
	t.Helper()
	data := map[uint32]string{}
	open := map[uint32]bool{}
	for _, s := range streams {
		open[s] = true
	}
	timeout := time.After(10 * time.Second)
	for len(open) > 0 {
		select {
		case f, ok := <-frames:
			switch {
			case !ok:
				t.Fatalf("the server closed the connection; data so far: %q", data)
			case f.typ == frameGoAway:
				t.Fatalf("the server ended the connection (GOAWAY); data so far: %q", data)
			case f.typ == frameData && open[f.stream]:
				data[f.stream] += string(f.payload)
			}
			if open[f.stream] && (f.flags&flagEndStream != 0 && (f.typ == frameData || f.typ == frameHeaders) || f.typ == frameRSTStream && data[f.stream] != "") {
				delete(open, f.stream)
			}
		case <-timeout:
			t.Fatalf("within 10 s, streams %v did not end; data: %q", open, data)
		}
	}
	return data
}
