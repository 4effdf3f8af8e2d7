package store

import (
	"strings"
	"testing"
)

// An etcd prefix segment is made of exactly letters, digits and ._-.
func TestEtcdPrefixChars(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		want := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("._-", b) >= 0
		if got := etcdPrefixChars.Has(b); got != want {
			t.Errorf("etcd prefix set has %q: got %v, want %v", b, got, want)
		}
	}
}

// An etcd URL gives endpoints and a prefix; a port is 1 to 65535 written
// plainly, as everywhere in the configuration.
func TestParseEtcdURL(t *testing.T) {
	cfg, err := ParseEtcdURL("etcds://10.0.0.1:2379,[::1]:2379/shop/cats")
	if err != nil || strings.Join(cfg.Endpoints, " ") != "https://10.0.0.1:2379 https://[::1]:2379" || cfg.Prefix != "shop/cats" {
		t.Errorf("got %+v, %v", cfg, err)
	}
	for _, bad := range []string{"etcd://h:02379", "etcd://h:+2379", "etcd://h:0", "etcd://:2379", "etcd://u:p@h:2379", "etcd://h:2379/a/../b"} {
		if _, err := ParseEtcdURL(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
