package cors

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	if p, err := Parse("  "); p != nil || err != nil {
		t.Errorf("Parse(blank) = %v, %v; want nil, nil (CORS off)", p, err)
	}
	p, err := Parse("HTTPS://App.Example.COM:443, http://127.0.0.1:3000")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.String(), "http://127.0.0.1:3000,https://app.example.com"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for origin, want := range map[string]bool{
		"https://app.example.com": true, "http://127.0.0.1:3000": true,
		"https://app.example.com:443": false, "http://app.example.com": false, "null": false, "": false,
	} {
		if got := p.AllowOrigin(origin) != nil; got != want {
			t.Errorf("AllowOrigin(%q) allowed = %v, want %v", origin, got, want)
		}
	}
	for v, wantErr := range map[string]string{
		"https://a.example,,https://b.example": "entry 2: empty",
		"https://a.example,*":                  "entry 2: * cannot be combined",
		"https://a.example:080":                "port that is not 1 to 65535",
		"https://*.example.com":                "a host that is not a name",
		"https://a.example/":                   "more than a scheme, a host and a port",
	} {
		if _, err := Parse(v); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", v, err, wantErr)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	one, _ := Parse("https://app.example.com")
	anyOrigin, _ := Parse("*")
	for _, tt := range []struct {
		name, origin string
		p            *Policy
		allow, vary  string
	}{
		{"allowed", "https://app.example.com", one, "https://app.example.com", "Origin"},
		{"other origin", "https://evil.example", one, "", "Origin"},
		{"no origin", "", one, "", "Origin"},
		{"any", "https://evil.example", anyOrigin, "*", ""},
	} {
		r := httptest.NewRequest("GET", "/v1/categories", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		rec := httptest.NewRecorder()
		tt.p.Headers(ok).ServeHTTP(rec, r)
		h := rec.Header()
		if got := h.Get("Access-Control-Allow-Origin"); got != tt.allow {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", tt.name, got, tt.allow)
		}
		if got := h.Get("Vary"); got != tt.vary {
			t.Errorf("%s: Vary %q, want %q", tt.name, got, tt.vary)
		}
		if exposed := h.Get("Access-Control-Expose-Headers") != ""; exposed != (tt.allow != "") {
			t.Errorf("%s: Access-Control-Expose-Headers present = %v", tt.name, exposed)
		}
	}
	h := http.Header{}
	one.SetPreflightHeaders(h, []string{"GET, POST"})
	if h.Get("Access-Control-Allow-Methods") != "GET, POST" || h.Get("Access-Control-Max-Age") != "7200" ||
		!strings.Contains(h.Get("Vary"), "Access-Control-Request-Headers") {
		t.Errorf("preflight headers: %v", h)
	}
}
