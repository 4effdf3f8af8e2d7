package envconf

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

var testVars = []Var{
	{Name: "T_ADDR", Default: ":8080", Help: "listen address"},
	{Name: "T_TTL", Default: "24h", Help: "how long\nkept"},
	{Name: "T_DELAY", Help: "delay"},
	{Name: "T_MAX", Default: "10000", Help: "at most"},
	{Name: "T_AT", Default: "2026-01-01T00:00:00Z", Help: "when"},
	{Name: "T_OTHER", Help: "another list", Group: "Others:"},
}

func reader(env map[string]string) *Reader {
	return NewReader(func(k string) string { return env[k] }, testVars)
}

func TestDefaultsAndBlanks(t *testing.T) {
	t.Parallel()
	r := reader(map[string]string{"T_ADDR": "  ", "T_DELAY": " 5s "})
	if got := r.String("T_ADDR"); got != ":8080" {
		t.Errorf("blank T_ADDR: got %q, want the default :8080", got)
	}
	if _, set := r.Lookup("T_ADDR"); set {
		t.Error("blank T_ADDR: Lookup says set")
	}
	if d, err := r.Duration("T_DELAY", 0); d != 5*time.Second || err != nil {
		t.Errorf("T_DELAY: got %v, %v; want 5s (trimmed)", d, err)
	}
	if d, err := r.Duration("T_TTL", 1); d != 24*time.Hour || err != nil {
		t.Errorf("T_TTL: got %v, %v; want the default 24h", d, err)
	}
	if n, err := r.Count("T_MAX"); n != 10000 || err != nil {
		t.Errorf("T_MAX: got %d, %v; want the default 10000", n, err)
	}
	if at, err := r.Instant("T_AT"); !at.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || err != nil {
		t.Errorf("T_AT: got %v, %v", at, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a variable missing from the list: no panic")
		}
	}()
	r.String("T_MISSING")
}

// Every refusal names the variable, quotes at most 40 characters of the
// value with controls escaped, and says what is wanted with an example.
func TestRefusals(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("9", 100)
	tests := []struct {
		name, value string
		read        func(r *Reader) error
		want        string
	}{
		{"T_TTL", "0s", func(r *Reader) error { _, err := r.Duration("T_TTL", 1); return err }, `T_TTL: "0s" is not a positive Go duration, such as 24h`},
		{"T_TTL", "soon", func(r *Reader) error { _, err := r.Duration("T_TTL", 1); return err }, `T_TTL: "soon" is not a positive Go duration, such as 24h`},
		{"T_DELAY", "-1s", func(r *Reader) error { _, err := r.Duration("T_DELAY", 0); return err }, `T_DELAY: "-1s" is not a Go duration of 0s or more, such as 30s`},
		{"T_DELAY", "1s", func(r *Reader) error { _, err := r.Duration("T_DELAY", 2*time.Second); return err }, `T_DELAY: "1s" is not a Go duration of 2s or more, such as 30s`},
		{"T_MAX", "010", func(r *Reader) error { _, err := r.Count("T_MAX"); return err }, `T_MAX: "010" is not a positive whole number written plainly, such as 10000`},
		{"T_MAX", "+5", func(r *Reader) error { _, err := r.Count("T_MAX"); return err }, `T_MAX: "+5" is not a positive whole number`},
		{"T_MAX", "0", func(r *Reader) error { _, err := r.Count("T_MAX"); return err }, `T_MAX: "0" is not a positive whole number`},
		{"T_MAX", long, func(r *Reader) error { _, err := r.Count("T_MAX"); return err }, `T_MAX: "` + long[:40] + `…" is not`},
		{"T_MAX", "1\x1b[2J", func(r *Reader) error { _, err := r.Count("T_MAX"); return err }, `T_MAX: "1\x1b[2J" is not`},
		{"T_AT", "tomorrow", func(r *Reader) error { _, err := r.Instant("T_AT"); return err }, `T_AT: "tomorrow" is not an RFC 3339 instant, such as 2026-01-01T00:00:00Z`},
		{"T_ADDR", "8080", func(r *Reader) error { _, err := r.Address("T_ADDR"); return err }, `T_ADDR: "8080" is not HOST:PORT or :PORT`},
		{"T_ADDR", ":080", func(r *Reader) error { _, err := r.Address("T_ADDR"); return err }, `T_ADDR: ":080" is not HOST:PORT`},
		{"T_ADDR", ":65536", func(r *Reader) error { _, err := r.Address("T_ADDR"); return err }, `T_ADDR: ":65536" is not HOST:PORT`},
		{"T_ADDR", "bad host:80", func(r *Reader) error { _, err := r.Address("T_ADDR"); return err }, `T_ADDR: "bad host:80" is not HOST:PORT`},
	}
	for _, tt := range tests {
		err := tt.read(reader(map[string]string{tt.name: tt.value}))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s=%q: got %v, want %s…", tt.name, tt.value, err, tt.want)
		}
		if err != nil && strings.ContainsRune(err.Error(), '\x1b') {
			t.Errorf("%s=%q: the error holds a raw control character: %q", tt.name, tt.value, err)
		}
	}
}

func TestAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{":8080", "127.0.0.1:0", "[::1]:8080", "localhost:65535", "0.0.0.0:1"} {
		if got, err := reader(map[string]string{"T_ADDR": addr}).Address("T_ADDR"); got != addr || err != nil {
			t.Errorf("%q: got %q, %v", addr, got, err)
		}
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	Usage(&b, testVars)
	want := `  T_ADDR   listen address (default :8080)
  T_TTL    how long
           kept (default 24h)
  T_DELAY  delay
  T_MAX    at most (default 10000)
  T_AT     when (default 2026-01-01T00:00:00Z)

Others:

  T_OTHER  another list
`
	if b.String() != want {
		t.Errorf("Usage:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestUnknowns(t *testing.T) {
	t.Parallel()
	vars := []Var{{Name: "APP_ADDR"}, {Name: "APP_API_KEYS"}, {Name: "APP_TLS_CERT_FILE"}, {Name: "APP_TLS_KEY_FILE"}, {Name: "APP_DATA"}}
	environ := []string{
		"PATH=/usr/bin",
		"APP_ADDR=:8080",              // known
		"APP_API_KEY=s3cret-value",    // a letter dropped
		"APP_TLS_CERTFILE=/etc/c.pem", // an underscore dropped
		"app_data=/var/lib/x",         // the case
		"APP_DTAA=x",                  // two letters swapped
		"APP_WHATEVER=1",              // nothing close
		"APP_API_KEY=again",           // a second entry of a name
		"APP_LINK_HOST=10.0.0.1",      // skipped
		"APPLICATION=1",               // not the prefix
		"NOEQUALS",                    // a malformed entry, no value
		"APP_TLS_KEY_FIL=/etc/k.pem",  // a letter dropped from a long name
		"APP_TLS_KY_FL=/etc/k.pem",    // three edits of a long name
		"APP_A=x",                     // three edits of a short name
	}
	got := Unknowns(environ, "APP_", vars, func(name string) bool { return strings.HasSuffix(name, "_HOST") })
	want := []Unknown{
		{"APP_API_KEY", "APP_API_KEYS"},
		{"APP_TLS_CERTFILE", "APP_TLS_CERT_FILE"},
		{"app_data", "APP_DATA"},
		{"APP_DTAA", "APP_DATA"},
		{"APP_WHATEVER", ""},
		{"APP_TLS_KEY_FIL", "APP_TLS_KEY_FILE"},
		{"APP_TLS_KY_FL", "APP_TLS_KEY_FILE"},
		{"APP_A", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Unknowns:\n got %v\nwant %v", got, want)
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"abc", "abc", 0},
		{"abc", "abd", 1}, {"abc", "ab", 1}, {"ab", "abc", 1}, {"abc", "acb", 1},
		{"KEYS", "KYES", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestGetenv(t *testing.T) {
	t.Parallel()
	getenv := Getenv([]string{"A=1", "B=x=y", "A=2", "C=", "D"})
	for name, want := range map[string]string{"A": "1", "B": "x=y", "C": "", "D": "", "E": ""} {
		if got := getenv(name); got != want {
			t.Errorf("getenv(%q) = %q, want %q", name, got, want)
		}
	}
}
