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
