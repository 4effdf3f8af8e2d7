package textcut

import "testing"

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 0, ""},
		{"short", 5, "short"},
		{"longer", 4, "long…"},
		{"héllo", 2, "h…"}, // é is two bytes: not cut inside it
		{"héllo", 3, "hé…"},
		{"日本", 1, "…"},
		{"abc", 0, "…"},
	}
	for _, tt := range tests {
		if got := Truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d): got %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestShowControls(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\there", "tabU+0009here"},
		{"line\r\nbreak", "lineU+000DU+000Abreak"},
		{"\x1b[2Jclear", "U+001B[2Jclear"},
		{"caf\u00e9", "caf\u00e9"},
		{"rtl\u202eevil", "rtlU+202Eevil"},
		{"del\x7f", "delU+007F"},
	}
	for _, tt := range tests {
		if got := ShowControls(tt.in); got != tt.want {
			t.Errorf("ShowControls(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestQuoteName(t *testing.T) {
	t.Parallel()
	long := ""
	for range 70 {
		long += "é"
	}
	tests := []struct{ in, want string }{
		{"nmae", `"nmae"`},
		{"a\nb", `"aU+000Ab"`},
		{"zero\u200bwidth", `"zero\u200bwidth"`},
		{long, `"` + long[:64*2] + `…"`},
	}
	for _, tt := range tests {
		if got := QuoteName(tt.in); got != tt.want {
			t.Errorf("QuoteName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
