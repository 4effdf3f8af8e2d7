package tlsreload

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePair writes a self-signed certificate of serial and its key to
// dir, as cert.pem and key.pem, and returns their paths.
func writePair(t *testing.T, dir string, serial int64) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return certFile, keyFile
}

// write replaces path with data in one rename.
func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// Load's error names the file at fault and says whether it is the key file.
func TestLoadNamesTheFileAtFault(t *testing.T) {
	t.Parallel()
	certFile, keyFile := writePair(t, t.TempDir(), 1)
	_, otherKey := writePair(t, t.TempDir(), 2)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := []struct {
		name, cert, key string
		wantFile        string
		wantKeyFile     bool
	}{
		{"key of another certificate", certFile, otherKey, otherKey, true},
		{"not a certificate", keyFile, keyFile, keyFile, false},
		{"the certificate file for both", certFile, certFile, certFile, true},
		{"key missing", certFile, missing, missing, true},
		{"certificate missing", missing, keyFile, missing, false},
	}
	for _, tt := range tests {
		_, err := Load(tt.cert, tt.key)
		var e *Error
		if !errors.As(err, &e) || e.File != tt.wantFile || e.KeyFile != tt.wantKeyFile || !strings.Contains(err.Error(), tt.wantFile) {
			t.Errorf("%s: got %v (%+v), want an *Error naming %s, KeyFile %v", tt.name, err, e, tt.wantFile, tt.wantKeyFile)
		}
	}
	if _, err := Load(certFile, missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing key file: %v, want it to match fs.ErrNotExist", err)
	}
}

// A pair that does not match is kept out by a reload, which logs the file
// at fault and no key material; a good one is served by new handshakes.
func TestReloadKeepsThePairInForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, 1)
	files, err := Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	p := New(files, 0, slog.New(slog.NewJSONHandler(&logs, nil)))
	served := func() int64 {
		cert, err := p.ServerConfig().GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return cert.Leaf.SerialNumber.Int64()
	}
	_, strayKey := writePair(t, t.TempDir(), 99)
	stray, err := os.ReadFile(strayKey)
	if err != nil {
		t.Fatal(err)
	}
	write(t, keyFile, stray)
	p.Reloader().Reload("SIGHUP")
	if got := served(); got != 1 || !strings.Contains(logs.String(), `"msg":"TLS certificate not reloaded; the one in force stays","reason":"SIGHUP","file":"`+keyFile+`"`) {
		t.Fatalf("after a key that does not match: serial %d served, log %s; want 1 kept and the key file named", got, &logs)
	}
	if bytes.Contains(logs.Bytes(), bytes.Split(stray, []byte("\n"))[1]) {
		t.Fatalf("key material in the log")
	}
	writePair(t, dir, 2)
	p.Reloader().Reload("SIGHUP")
	if got := served(); got != 2 || !strings.Contains(logs.String(), `"msg":"TLS certificate reloaded","reason":"SIGHUP","cert_file":"`+certFile+`","serial":"2"`) {
		t.Errorf("after a good pair: serial %d served, log %s; want 2", got, &logs)
	}
}
