package accesslog

import (
	"strings"
	"testing"
	"time"

	"petstore/internal/testkit"
)

// A failed TLS handshake is logged at most once a second, the next line
// saying how many were left out; net/http's other lines all are.
func TestHandshakeErrorsLoggedOncePerSecond(t *testing.T) {
	t.Parallel()
	logs := &testkit.LockedBuffer{}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := ServerErrorLog(NewJSONLogger(logs), func() time.Time { return now })
	for range 5 {
		l.Printf("http: TLS handshake error from 192.0.2.1:4000: EOF")
	}
	l.Printf("http: Accept error: too many open files; retrying in 5ms")
	now = now.Add(handshakeLogEvery)
	l.Printf("http: TLS handshake error from 192.0.2.2:4000: tls: client offered only unsupported versions")
	lines := logs.Lines()
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), logs)
	}
	for i, want := range []string{
		`"level":"WARN","msg":"http: TLS handshake error from 192.0.2.1:4000: EOF","handshake_errors_not_logged":0}`,
		`"level":"WARN","msg":"http: Accept error: too many open files; retrying in 5ms"}`,
		`"msg":"http: TLS handshake error from 192.0.2.2:4000: tls: client offered only unsupported versions","handshake_errors_not_logged":4}`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant it to hold %s", i+1, lines[i], want)
		}
	}
}
