package hostport

import (
	"errors"
	"testing"
)

func TestPort(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"1", "80", "443", "2379", "65535"} {
		if _, err := Port(p); err != nil {
			t.Errorf("Port(%q): %v", p, err)
		}
	}
	for _, p := range []string{"", "0", "080", "+80", "-1", "65536", "99999", " 80", "80 ", "8o", "0x50"} {
		if n, err := Port(p); !errors.Is(err, ErrPort) {
			t.Errorf("Port(%q) = %d, %v; want ErrPort", p, n, err)
		}
	}
}

func TestHost(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"localhost", "app.example.com", "my_host.internal", "xn--bcher-kva.example", "127.0.0.1", "::1", "2001:db8::1"} {
		if err := Host(h); err != nil {
			t.Errorf("Host(%q): %v", h, err)
		}
	}
	for _, h := range []string{"", ".", "a..example", ".example", "example.", "*.example.com", "bücher.example", "a b", "a/b", "[::1]"} {
		if err := Host(h); !errors.Is(err, ErrHost) {
			t.Errorf("Host(%q) = %v; want ErrHost", h, err)
		}
	}
}
