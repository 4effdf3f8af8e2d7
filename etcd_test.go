package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEtcdConfig(t *testing.T) {
	t.Parallel()
	pwFile := t.TempDir() + "/pw"
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cfg, err := loadEtcdConfig(env("PETSTORE_ETCD_USER", "svc", "PETSTORE_ETCD_PASSWORD_FILE", pwFile, "PETSTORE_ETCD_START_TIMEOUT", "5s"),
		"etcds://h1:2379,[::1]:2379/a/b/")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Endpoints, ","); got != "https://h1:2379,https://[::1]:2379" || cfg.Prefix != "a/b" ||
		cfg.User != "svc" || cfg.Password != "s3cret" || cfg.StartTimeout != 5*time.Second {
		t.Errorf("got endpoints %s prefix %q user %q timeout %v", got, cfg.Prefix, cfg.User, cfg.StartTimeout)
	}
	if cfg, _ := loadEtcdConfig(env(), "etcd://h:1"); cfg.Prefix != "petstore" || cfg.StartTimeout != 30*time.Second {
		t.Errorf("defaults: got prefix %q timeout %v", cfg.Prefix, cfg.StartTimeout)
	}
	for _, tc := range []struct {
		data     string
		env      []string
		variable string
	}{
		{"etcd://h1", nil, "PETSTORE_DATA"},
		{"etcd://h1:x", nil, "PETSTORE_DATA"},
		{"etcd://user:pw@h1:2379", nil, "PETSTORE_DATA"},
		{"etcd://h1:2379/a//b", nil, "PETSTORE_DATA"},
		{"etcd://h1:2379/a b", nil, "PETSTORE_DATA"},
		{"etcd://h1:2379,", nil, "PETSTORE_DATA"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_START_TIMEOUT", "30"}, "PETSTORE_ETCD_START_TIMEOUT"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_START_TIMEOUT", "-1s"}, "PETSTORE_ETCD_START_TIMEOUT"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_USER", "svc"}, "PETSTORE_ETCD_PASSWORD_FILE"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_PASSWORD_FILE", pwFile}, "PETSTORE_ETCD_USER"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_USER", "svc", "PETSTORE_ETCD_PASSWORD_FILE", pwFile + ".missing"}, "PETSTORE_ETCD_PASSWORD_FILE"},
		{"etcd://h1:2379", []string{"PETSTORE_ETCD_CA_FILE", pwFile}, "PETSTORE_ETCD_CA_FILE"},
	} {
		_, err := loadConfig(env(append([]string{"PETSTORE_DATA", tc.data}, tc.env...)...))
		if err == nil || !strings.Contains(err.Error(), tc.variable) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %v: got %v, want one line naming %s", tc.data, tc.env, err, tc.variable)
		}
	}
}

// Start waits at most PETSTORE_ETCD_START_TIMEOUT for the cluster, then
// fails with one line naming the endpoints.
func TestEtcdStartTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_API_KEYS": e2eKey,
		"PETSTORE_DATA": "etcd://" + addr + "/p", "PETSTORE_ETCD_START_TIMEOUT": "300ms"}
	start := time.Now()
	err = run(t.Context(), []string{"petstore"}, environOf(env), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "PETSTORE_ETCD_START_TIMEOUT") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want one line naming %s and PETSTORE_ETCD_START_TIMEOUT", err, addr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("start gave up after %v, want about 300ms", d)
	}
}

// A CA file for etcds:// that cannot be read, or holds no certificate,
// stops the start with one line naming PETSTORE_ETCD_CA_FILE.
func TestEtcdCAFileNamed(t *testing.T) {
	t.Parallel()
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{notPEM, notPEM + ".missing"} {
		env := map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_API_KEYS": e2eKey,
			"PETSTORE_DATA": "etcds://127.0.0.1:1/p", "PETSTORE_ETCD_CA_FILE": file}
		err := run(t.Context(), []string{"petstore"}, environOf(env), io.Discard, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), "PETSTORE_ETCD_CA_FILE: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line naming PETSTORE_ETCD_CA_FILE", file, err)
		}
	}
}
