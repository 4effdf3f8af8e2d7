package clients

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tlsFiles writes a self-signed certificate for 127.0.0.1 and its key into
// dir and returns the variables that make petstore serve it, and the pool
// that trusts it.
func tlsFiles(t testing.TB, dir string) (map[string]string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return map[string]string{"PETSTORE_TLS_CERT_FILE": certFile, "PETSTORE_TLS_KEY_FILE": keyFile}, roots
}

// HTTP/2 frames (RFC 9113 sections 4 and 6), written by hand: what a
// hostile client sends, which Go's client never would.
const (
	frameHeaders     = 0x1
	frameSettings    = 0x4
	flagEndStream    = 0x1
	flagEndHeaders   = 0x4
	settingWindow    = 0x4 // SETTINGS_INITIAL_WINDOW_SIZE
	http2ClientMagic = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// appendFrame appends a frame of typ with flags on stream.
func appendFrame(b []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream)
	return append(b, payload...)
}

// hpackLiteral appends a header field to an HPACK block as a literal
// without indexing, its name and value not Huffman-coded (RFC 7541 6.2.2).
func hpackLiteral(block []byte, name, value string) []byte {
	block = append(block, 0)
	for _, s := range []string{name, value} {
		n := len(s)
		if n < 127 {
			block = append(block, byte(n))
		} else {
			block, n = append(block, 127), n-127
			for n >= 128 {
				block, n = append(block, byte(n%128+128)), n/128
			}
			block = append(block, byte(n))
		}
		block = append(block, s...)
	}
	return block
}

// requestBlock is the HPACK block of a request without a key.
func requestBlock(method, path string) []byte {
	block := hpackLiteral(nil, ":method", method)
	block = hpackLiteral(block, ":scheme", "https")
	block = hpackLiteral(block, ":authority", "127.0.0.1")
	return hpackLiteral(block, ":path", path)
}

// dialH2 opens a TLS connection to addr that negotiated h2.
func dialH2(addr string, roots *x509.CertPool) (*tls.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	return tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
}

// holdStreams sends, on an HTTP/2 connection, what a client without a key
// sends to hold the server: a zero flow-control window, a stream whose large
// answer (the OpenAPI document) cannot be sent behind it, and a second
// stream's header block begun and never ended. It then reads and discards
// what the server sends until the connection ends.
func holdStreams(conn net.Conn) error {
	var settings []byte
	settings = binary.BigEndian.AppendUint16(settings, settingWindow)
	settings = binary.BigEndian.AppendUint32(settings, 0)
	out := appendFrame([]byte(http2ClientMagic), frameSettings, 0, 0, settings)
	out = appendFrame(out, frameHeaders, flagEndHeaders|flagEndStream, 1, requestBlock("GET", "/v1/openapi.json"))
	unfinished := hpackLiteral(requestBlock("GET", "/healthz"), "x-pad", string(make([]byte, 8<<10)))
	out = appendFrame(out, frameHeaders, flagEndStream, 3, unfinished) // no END_HEADERS
	if _, err := conn.Write(out); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, conn)
	return err
}
