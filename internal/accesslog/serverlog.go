package accesslog

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"sync"
	"time"
)

// ServerErrorLog returns the ErrorLog of the HTTP server: net/http's own
// lines, as warnings of log. A failed TLS handshake is the client's doing
// (a scanner, a plain-HTTP request on the HTTPS port, an old TLS version),
// and anyone can cause one per connection they open: those lines are
// written at most one per handshakeLogEvery, each saying how many were left
// out before it, so that a client without a key cannot fill the log.
func ServerErrorLog(l *slog.Logger, now func() time.Time) *log.Logger {
	return log.New(&serverErrorLog{log: l, now: now}, "", 0)
}

// handshakeLogEvery is how often a failed TLS handshake is logged at most.
const handshakeLogEvery = time.Second

var handshakeError = []byte("http: TLS handshake error")

// serverErrorLog writes net/http's lines to log; see ServerErrorLog.
type serverErrorLog struct {
	log *slog.Logger
	now func() time.Time

	mu         sync.Mutex
	next       time.Time // a failed handshake is logged from then on
	suppressed int       // failed handshakes not logged since the last one that was
}

func (s *serverErrorLog) Write(p []byte) (int, error) {
	msg := string(bytes.TrimSuffix(p, []byte("\n")))
	if !bytes.HasPrefix(p, handshakeError) {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, msg)
		return len(p), nil
	}
	s.mu.Lock()
	now := s.now()
	if now.Before(s.next) {
		s.suppressed++
		s.mu.Unlock()
		return len(p), nil
	}
	left := s.suppressed
	s.next, s.suppressed = now.Add(handshakeLogEvery), 0
	s.mu.Unlock()
	s.log.LogAttrs(context.Background(), slog.LevelWarn, msg, slog.Int("handshake_errors_not_logged", left))
	return len(p), nil
}
