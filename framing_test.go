package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// rawAnswer is what one raw exchange got back.
type rawAnswer struct {
	resp   *http.Response
	body   petstoretest.ErrorBody // decoded when the answer is an Error
	closed bool                   // the server closed the connection after the answer
	extra  string                 // anything the server sent after the first answer
}

// rawExchange writes raw to addr, reads one answer, then reads on, bounded
// in time, to see whether the server closes the connection (EOF) or sends
// anything more, such as the answer to a request smuggled in the body.
// closeWrite half-closes the connection after writing, as a client that
// has nothing more to send.
func rawExchange(t *testing.T, addr, raw string, closeWrite bool) rawAnswer {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
	if closeWrite {
		conn.(*net.TCPConn).CloseWrite()
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	var a rawAnswer
	a.resp = resp
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(body, &a.body); err != nil {
			t.Fatalf("status %d: the body is not an Error: %s", resp.StatusCode, body)
		}
	}
	// An open connection would time out here; the server's idle timeout
	// is far longer than this deadline.
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	rest, err := io.ReadAll(br)
	a.extra = string(rest)
	var netErr net.Error
	a.closed = err == nil || errors.Is(err, io.EOF) || !(errors.As(err, &netErr) && netErr.Timeout())
	return a
}

// chunk encodes s as one chunk of a chunked body.
func chunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

// Ambiguous framing (RFC 9112 section 6.1; docs/security.md, "Connections"): the
// request is answered, with Connection: close, and the connection is then
// closed, so that a request smuggled in the body is never served.
func TestAmbiguousFramingClosesConnection(t *testing.T) {
	t.Parallel()
	svc := startRun(t, baseEnv(store.MemoryPath))
	auth := "Authorization: Bearer " + e2eKey + "\r\n"
	smuggled := "GET /v1/categories HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n"
	cases := []struct {
		name   string
		raw    string
		status int
		code   string
	}{
		{
			// net/http ignores Transfer-Encoding in HTTP/1.0 and reads the
			// body as empty: the create is a 400, and the chunked bytes
			// after the head must not be read as a request.
			name: "HTTP/1.0 with Transfer-Encoding and keep-alive",
			raw: "POST /v1/categories HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n" + auth +
				"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled,
			status: http.StatusBadRequest, code: codeInvalidJSON,
		},
		{
			name:   "HTTP/1.0 with keep-alive",
			raw:    "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + smuggled,
			status: http.StatusOK,
		},
		{
			name: "Content-Length and Transfer-Encoding",
			raw: "POST /v1/categories HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\n" +
				"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(`{"name":"cl-te"}`) + "0\r\n\r\n" + smuggled,
			status: http.StatusCreated,
		},
		{
			name: "chunked",
			raw: "POST /v1/categories HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\n" +
				"Transfer-Encoding: chunked\r\n\r\n" + chunk(`{"name":"chunked"}`) + "0\r\n\r\n" + smuggled,
			status: http.StatusCreated,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := rawExchange(t, svc.addr, c.raw, false)
			if a.resp.StatusCode != c.status {
				t.Fatalf("status: got %d, want %d (%+v)", a.resp.StatusCode, c.status, a.body)
			}
			if c.code != "" && a.body.Code != c.code {
				t.Errorf("code: got %q, want %q", a.body.Code, c.code)
			}
			// ReadResponse turns Connection: close into resp.Close.
			if !a.resp.Close {
				t.Errorf("the answer has no Connection: close (headers %v)", a.resp.Header)
			}
			if !a.closed {
				t.Errorf("the connection is still open after the answer")
			}
			if a.extra != "" {
				t.Errorf("the server answered the smuggled request: %q", petstoretest.Redact(a.extra))
			}
		})
	}

	// An ordinary HTTP/1.1 request keeps its connection.
	a := rawExchange(t, svc.addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", false)
	if a.resp.StatusCode != http.StatusOK || a.resp.Close || a.closed {
		t.Errorf("HTTP/1.1 GET: status %d, Connection: close %v, closed %v; want 200, kept open", a.resp.StatusCode, a.resp.Close, a.closed)
	}
}

// Bodies that cannot be read because of the client are its mistake: a 400
// (408 when too slow), never a 500, and their access lines are INFO.
func TestBodyReadErrorsAreTheClients(t *testing.T) {
	t.Parallel()
	svc := startRun(t, baseEnv(store.MemoryPath), func(l *limits) { l.readTimeout = 500 * time.Millisecond })
	head := "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + e2eKey + "\r\nContent-Type: application/json\r\n"
	chunked := head + "Transfer-Encoding: chunked\r\n\r\n"
	cases := []struct {
		name       string
		raw        string
		closeWrite bool
		status     int
		code       string
		message    string
	}{
		{"chunk size zz", chunked + "zz\r\n{}\r\n0\r\n\r\n", false, 400, codeInvalidJSON, "chunked encoding is malformed"},
		{"chunk size -1", chunked + "-1\r\n{}\r\n0\r\n\r\n", false, 400, codeInvalidJSON, "chunked encoding is malformed"},
		{"chunk shorter than its size", chunked + "5\r\n{\"name\":\"short\"}\r\n0\r\n\r\n", false, 400, codeInvalidJSON, "chunked encoding is malformed"},
		{"chunk size too large", chunked + "fffffffffffffffffff\r\n{}\r\n0\r\n\r\n", false, 400, codeInvalidJSON, "chunked encoding is malformed"},
		{"chunked body cut", chunked + "40\r\n{\"name\":", true, 400, codeInvalidJSON, "ended before its last chunk"},
		{"body shorter than Content-Length", head + "Content-Length: 100\r\n\r\n{\"name\":\"cut\"}", true, 400, codeInvalidJSON, "ended before its declared Content-Length"},
		{"body too slow", head + "Content-Length: 100\r\n\r\n{\"name\":", false, 408, codeRequestTimeout, "not received within"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := rawExchange(t, svc.addr, c.raw, c.closeWrite)
			if a.resp.StatusCode != c.status || a.body.Code != c.code || a.body.Status != c.status {
				t.Fatalf("got %d %+v, want %d %s", a.resp.StatusCode, a.body, c.status, c.code)
			}
			if !strings.Contains(a.body.Message, c.message) {
				t.Errorf("message: got %q, want it to say %q", a.body.Message, c.message)
			}
		})
	}

	// Every answer above has its access line, at INFO. They reach stderr
	// through the buffered access log: poll, bounded.
	want := map[float64]int{400: 6, 408: 1}
	var got map[float64]int
	deadline := time.Now().Add(5 * time.Second)
	for {
		got = map[float64]int{}
		var lines []petstoretest.LogLine
		for _, line := range svc.stderr.Lines() {
			var l petstoretest.LogLine
			if json.Unmarshal([]byte(line), &l) == nil && l["msg"] == "request" {
				lines = append(lines, l)
			}
		}
		for _, l := range lines {
			if l["route"] != "POST /v1/categories" {
				continue
			}
			if l["level"] != "INFO" {
				t.Fatalf("access line at %v, want INFO: %v", l["level"], l)
			}
			got[l["status"].(float64)]++
		}
		if got[400] == want[400] && got[408] == want[408] || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the buffered log, bounded
	}
	if got[400] != want[400] || got[408] != want[408] || len(got) != 2 {
		t.Errorf("access lines by status: got %v, want %v", got, want)
	}
	observeAccessLog([]byte(svc.stderr.String()))
}

// A request refused for its key is answered at once, even while its body is
// still on the way: net/http would read the body first to keep the
// connection, so the connection is closed instead.
func TestUnauthorizedDoesNotWaitForTheBody(t *testing.T) {
	t.Parallel()
	svc := startRun(t, baseEnv(store.MemoryPath))
	conn, err := net.DialTimeout("tcp", svc.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	conn.SetReadDeadline(time.Now().Add(3 * time.Second)) // far less than the 30 s read timeout
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer while the body is pending: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Errorf("got %d (close %v), want 401 with Connection: close", resp.StatusCode, resp.Close)
	}
}
