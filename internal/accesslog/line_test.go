package accesslog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/rawjson"
)

// slogLine is what a logger of NewJSONLogger writes for l.
func slogLine(t testing.TB, l Line) string {
	t.Helper()
	var buf bytes.Buffer
	record := slog.NewRecord(l.Time, slog.LevelInfo, "request", 0)
	record.AddAttrs(l.Attrs()...)
	if err := slog.NewJSONHandler(logEscaper{&buf}, nil).Handle(context.Background(), record); err != nil {
		t.Fatalf("slog: %v", err)
	}
	return buf.String()
}

func TestAccessLineMatchesSlog(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 8, 4, 40, 675450441, time.UTC)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	base := Line{Time: at, Method: "GET", Route: "GET /v1/categories", Path: "/v1/categories",
		Status: 200, Bytes: 4101, DurationMS: 0.011, RequestID: "a1b2c3d4e5f6-17"}
	tests := []struct {
		name string
		edit func(l *Line)
	}{
		{"plain", func(*Line) {}},
		{"error message", func(l *Line) { l.Status, l.Err = 409, "conflict: a category named \"dog\" already exists" }},
		{"4xx with error", func(l *Line) { l.Status, l.Err = 401, `unauthorized: missing API key "x"` }},
		{"no route", func(l *Line) { l.Route, l.Status = "", 404 }},
		{"html characters", func(l *Line) { l.Path = "/v1/<script>&amp;" }},
		{"control characters", func(l *Line) { l.Path = "/a\x00b\x08c\x0cd\ne\rf\tg\x1f\x7f" }},
		{"quotes and backslashes", func(l *Line) { l.Err = `say "hi" \ bye` }},
		{"line separators", func(l *Line) { l.Path = "/x\u2028y\u2029z" }},
		{"DEL and C1 controls", func(l *Line) { l.Path = "/a\x7fb\u0080c\u0085d\u009f" }},
		{"bidirectional controls", func(l *Line) {
			l.Path, l.Err = "/\u202eab\u2066c\u2069\u200e\u200f\u061c", "not_found: no such path: /\u202eab"
		}},
		{"invalid UTF-8", func(l *Line) { l.Path = "/\xff\xfe/é/\xc3" }},
		{"non-ASCII", func(l *Line) { l.Path = "/v1/catégories/日本/🐈" }},
		{"zero duration", func(l *Line) { l.DurationMS = 0 }},
		{"long duration", func(l *Line) { l.DurationMS = 1234567.891 }},
		{"whole duration", func(l *Line) { l.DurationMS = 3 }},
		{"time with zeros trimmed", func(l *Line) { l.Time = time.Date(2026, 1, 2, 3, 4, 5, 100000000, time.UTC) }},
		{"time on the second", func(l *Line) { l.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }},
		{"time in another zone", func(l *Line) { l.Time = at.In(zone) }},
		{"time with a monotonic reading", func(l *Line) { l.Time = time.Now() }},
		{"big numbers", func(l *Line) { l.Bytes, l.Status = math.MaxInt64, 999 }},
		{"negative duration", func(l *Line) { l.DurationMS = -1.5 }},
		{"tiny duration", func(l *Line) { l.DurationMS = 5e-7 }},
		{"huge duration", func(l *Line) { l.DurationMS = 3e21 }},
		{"zero time", func(l *Line) { l.Time = time.Time{} }},
		{"key fingerprint", func(l *Line) { l.Key, l.Keyed = sha256.Sum256([]byte("test")), true }},
		{"key fingerprint and error", func(l *Line) {
			l.Key, l.Keyed, l.Status, l.Err = sha256.Sum256([]byte("test")), true, 429, "rate_limited: too many"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := base
			tt.edit(&l)
			if got, want := string(l.AppendJSON(nil)), slogLine(t, l); got != want {
				t.Errorf("access line differs from slog's:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func FuzzAccessLine(f *testing.F) {
	f.Add("GET", "GET /v1/categories", "/v1/categories", "id-1", "", 200, int64(12), int64(11), int64(1763798680675450441))
	f.Add("POST", "", "/\xff<&>\u2028", "", "conflict: \"x\"", 409, int64(0), int64(0), int64(0))
	f.Add("GET", "", "/\u202e\x7f\u0085", "", "x\u2066\u009b", 404, int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, method, route, path, requestID, errText string, status int, bytes, micros, nanos int64) {
		l := Line{
			Time: time.Unix(0, nanos).UTC(), Method: method, Route: route, Path: path,
			Status: status, Bytes: bytes, DurationMS: float64(micros) / 1000, RequestID: requestID, Err: errText,
		}
		if nanos == 0 {
			l.Time = time.Time{} // slog leaves a zero time out
		}
		if y := l.Time.Year(); y < 0 || y >= 10000 {
			t.Skip("slog refuses years outside 0..9999; a request's time is now")
		}
		got := string(l.AppendJSON(nil))
		if want := slogLine(t, l); got != want {
			t.Errorf("access line differs from slog's:\n got %q\nwant %q", got, want)
		}
		if strings.ContainsFunc(got, rawjson.HiddenControl) {
			t.Errorf("access line holds a control or bidirectional control raw: %q", got)
		}
	})
}

func BenchmarkAccessLine(b *testing.B) {
	l := Line{Time: time.Now(), Method: "GET", Route: "GET /v1/categories", Path: "/v1/categories",
		Status: 200, Bytes: 4101, DurationMS: 0.011, RequestID: "a1b2c3d4e5f6-17"}
	b.Run("appendJSON", func(b *testing.B) {
		a := New(io.Discard)
		b.ReportAllocs()
		for range b.N {
			a.Write(&l)
		}
	})
	b.Run("slog", func(b *testing.B) {
		log := slog.New(slog.NewJSONHandler(io.Discard, nil))
		b.ReportAllocs()
		for range b.N {
			log.LogAttrs(context.Background(), slog.LevelInfo, "request", l.Attrs()...)
		}
	})
}

// A keyed line names the key by its fingerprint: the first 8 hex digits of
// its SHA-256, as Fingerprint gives them.
func TestAccessLineKeyFingerprint(t *testing.T) {
	t.Parallel()
	d := sha256.Sum256([]byte("test"))
	if got, want := Fingerprint(d), "9f86d081"; got != want {
		t.Fatalf("fingerprint: got %q, want %q", got, want)
	}
	l := Line{Method: "GET", Status: 200, Key: d, Keyed: true}
	if got, want := string(l.AppendJSON(nil)), `,"key":"9f86d081"}`; !strings.Contains(got, want) {
		t.Errorf("access line %s: want it to hold %s", got, want)
	}
}

// appendTime keeps the date, clock and zone of the latest second; it must
// write what AppendFormat writes for every time, whatever second and zone
// the line before it had, and a day, a zone or a year away.
func TestAppendTimeMatchesRFC3339Nano(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("IST", 5*3600+1800), time.FixedZone("PST", -8*3600), time.FixedZone("odd", -(3*3600 + 59*60))}
	base := time.Date(2026, 11, 27, 23, 59, 58, 0, time.UTC)
	nanos := []int{0, 1, 10, 100_000_000, 120_000_000, 999_999_999, 500, 123_456_789}
	for round := range 3 {
		for i := range 40 {
			for _, loc := range zones {
				at := base.Add(time.Duration(i) * 250 * time.Millisecond).Add(time.Duration(nanos[(i+round)%len(nanos)])).In(loc)
				if got, want := string(appendTime([]byte("x"), at)), "x"+at.Format(time.RFC3339Nano); got != want {
					t.Fatalf("appendTime(%v): got %q, want %q", at, got, want)
				}
			}
		}
	}
	for _, at := range []time.Time{time.Date(-1, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)} {
		if got, want := string(appendTime(nil, at)), at.Format(time.RFC3339Nano); got != want {
			t.Errorf("appendTime(%v): got %q, want %q", at, got, want)
		}
	}
}

// appendLogFloat writes a duration from its integer microseconds; it must
// give strconv's shortest decimal for every one of them.
func TestAppendLogFloatMatchesStrconv(t *testing.T) {
	t.Parallel()
	check := func(f float64) {
		t.Helper()
		want := string(strconv.AppendFloat(nil, f, 'f', -1, 64))
		if math.IsNaN(f) || math.IsInf(f, 0) || f != 0 && (math.Abs(f) < 1e-6 || math.Abs(f) >= 1e21) {
			text, _ := json.Marshal(f)
			want = string(text)
		}
		if got := string(appendLogFloat(nil, f)); got != want && !(math.IsNaN(f) || math.IsInf(f, 0)) {
			t.Fatalf("appendLogFloat(%v): got %q, want %q", f, got, want)
		}
	}
	for us := int64(0); us < 500_000; us++ {
		check(float64(us) / 1000)
	}
	for us := int64(999_999_000_000); us < 1_000_000_001_000; us += 7 {
		check(float64(us) / 1000)
	}
	for _, f := range []float64{0.0005, 1.0005, 0.1 + 0.2, 1e-7, 123456.7891, 999999999.9999, 1e9, 1e9 + 0.001, 4.5e12, -0.001, -3} {
		check(f)
	}
}
