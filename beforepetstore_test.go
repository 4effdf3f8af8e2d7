package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// A few malformed requests are answered by net/http before any handler runs,
// so their answers are not JSON Error bodies. docs/security.md, "Requests"
// makes them the documented exceptions to "every answer is JSON": this test
// holds each to what Go answers and docs/api.md, "Answers before petstore"
// to listing it.
func TestNetHTTPAnswersBeforePetstore(t *testing.T) {
	t.Parallel()
	svc := startRun(t, baseEnv(store.MemoryPath))
	readme, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		raw    string
		status int
		readme string // what docs/api.md says of it
	}{
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusOK, "`OPTIONS *`"},
		{"Expect other than 100-continue", "GET /v1/categories HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n", http.StatusExpectationFailed, "`Expect`"},
		{"unsupported Transfer-Encoding", "POST /v1/categories HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", http.StatusNotImplemented, "`Transfer-Encoding`"},
		{"HTTP/2.0 request line", "GET /v1/categories HTTP/2.0\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported, "`HTTP/2.0`"},
		{"missing Host", "GET /v1/categories HTTP/1.1\r\n\r\n", http.StatusBadRequest, "`Host`"},
		{"unparsable request line", "GARBAGE\r\n\r\n", http.StatusBadRequest, "request line"},
		{"headers over 16 KiB", "GET /v1/categories HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 17<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge, "431"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", svc.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, tt.raw); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tt.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct == "application/json" {
				t.Errorf("net/http's own answer is JSON now: this is no longer an exception, update docs/api.md")
			}
			if !strings.Contains(string(readme), tt.readme) {
				t.Errorf("docs/api.md does not list this exception (looked for %q)", tt.readme)
			}
		})
	}
}

// The HTTP/2 connection preface is a request line net/http hands to petstore
// (method PRI, path *) rather than answering it itself, so it gets an Error
// body; docs/api.md says so beside the list above.
func TestHTTP2PrefaceGetsAnErrorBody(t *testing.T) {
	t.Parallel()
	svc := startRun(t, baseEnv(store.MemoryPath))
	readme, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`PRI * HTTP/2.0`") {
		t.Errorf("docs/api.md does not say what the HTTP/2 preface gets")
	}
	conn, err := net.DialTimeout("tcp", svc.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status: got %d, want 404; body %s", resp.StatusCode, body)
	}
	if eb, ok := petstoretest.CheckErrorBody(t, resp.StatusCode, resp.Header, body); ok && eb.Code != "not_found" {
		t.Errorf("code: got %q, want not_found", eb.Code)
	}
}

// A request's line and header block may take 16 KiB, not a byte more: one of
// exactly 16 KiB is served, one a byte longer gets net/http's 431
// (docs/api.md, "Limits"). net/http reads 4 KiB beyond MaxHeaderBytes before
// it refuses.
func TestHeaderBlockBound(t *testing.T) {
	t.Parallel()
	svc := startRun(t, baseEnv(store.MemoryPath))
	for _, tt := range []struct {
		size   int
		status int
	}{
		{16 << 10, http.StatusOK},
		{16<<10 + 1, http.StatusRequestHeaderFieldsTooLarge},
		{16<<10 - 1000, http.StatusOK},
		{16<<10 + 1000, http.StatusRequestHeaderFieldsTooLarge},
	} {
		head := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: "
		const tail = "\r\n\r\n"
		block := head + strings.Repeat("a", tt.size-len(head)-len(tail)) + tail
		conn, err := net.DialTimeout("tcp", svc.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, block); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Fatalf("%d-byte header block: reading the answer: %v", len(block), err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%d-byte header block: status %d, want %d", len(block), resp.StatusCode, tt.status)
		}
	}
}
