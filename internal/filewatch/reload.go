package filewatch

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"time"
)

// Reloader puts the contents of a Watch's files in force through Load:
// at once (Reload, on SIGHUP) or once a change has stayed put (Poll). A
// content that cannot be read or loaded leaves the one in force. Each
// outcome is logged with its reason: Reloaded at Info with the attributes
// Load returns, or Kept at Error with the file at fault and the error.
// Load's attributes and errors are logged as they are: they must never
// quote a secret the files hold.
type Reloader struct {
	Watch    *Watch
	Log      *slog.Logger
	Reloaded string // the message of a content put in force
	Kept     string // the message of one that could not be: the one in force stays
	// Load parses data, the contents of the Watch's files in its order,
	// and puts them in force, or returns why it cannot. attrs describe
	// the outcome: what was put in force, or the file at fault ("file").
	Load func(data [][]byte) (attrs []any, err error)
	// Loaded, when not nil, runs after the line of a content put in force.
	Loaded func()
}

// Reload reads the files at once and loads them; why is the reason logged.
func (r *Reloader) Reload(why string) {
	data, err := r.Watch.Read()
	r.load(why, data, err)
}

// Poll loads the files if a change has stayed put at time now (see Watch.Poll).
func (r *Reloader) Poll(now time.Time) {
	if data, due, err := r.Watch.Poll(now); due {
		r.load("file changed", data, err)
	}
}

// load loads data, or logs err, why it could not be read, and the file it names.
func (r *Reloader) load(why string, data [][]byte, err error) {
	attrs := []any{"reason", why}
	if err != nil {
		attrs = append(attrs, "file", pathOf(err))
	} else {
		var loaded []any
		loaded, err = r.Load(data)
		attrs = append(attrs, loaded...)
	}
	if err != nil {
		r.Log.Error(r.Kept, append(attrs, "error", err.Error())...)
		return
	}
	r.Log.Info(r.Reloaded, attrs...)
	if r.Loaded != nil {
		r.Loaded()
	}
}

// pathOf returns the file an error of Read or Poll names (they fail with
// an *fs.PathError).
func pathOf(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	return ""
}

// Serve reloads every one of rs on every signal on hup (the reason logged
// is "SIGHUP") and polls them every interval, until ctx is done. The
// interval is a timer set again after each look, not a ticker: two looks
// are never closer than interval, however late one ran.
func Serve(ctx context.Context, hup <-chan os.Signal, interval time.Duration, rs ...*Reloader) {
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			for _, r := range rs {
				r.Reload("SIGHUP")
			}
		case <-timer.C:
			for _, r := range rs {
				r.Poll(time.Now())
			}
			timer.Reset(interval)
		}
	}
}
