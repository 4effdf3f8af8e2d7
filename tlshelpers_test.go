package main

import (
	"bytes"
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
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"petstore/internal/accesslog"
	"petstore/internal/bodybudget"

	"petstore/internal/connlimit"
	"petstore/internal/tlsreload"
)

// Helpers of the TLS tests: certificates made here with crypto/x509
// (ECDSA P-256), clients of either protocol, a server built as run builds
// it, and the few HTTP/2 frames a test writes by hand to do what no polite
// client does (open more streams than allowed, stop half-way).

// testCA issues certificates for 127.0.0.1; clients trust it through roots.
type testCA struct {
	cert  *x509.Certificate
	key   *ecdsa.PrivateKey
	roots *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "petstore test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &testCA{cert: cert, key: key, roots: roots}
}

// issue returns a PEM certificate for 127.0.0.1 with serial, and its key.
func (ca *testCA) issue(t testing.TB, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// The CA follows the leaf, as in a chain file, so that petstoretest.TLSRoots can
	// trust the file's last certificate.
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})...)
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// writeFileAtomic replaces path with data, mode 0600, in one rename, as a
// careful operator (or cert-manager) does.
func writeFileAtomic(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tlsEnv writes a pair of serial to dir and returns the variables that
// serve it.
func tlsEnv(t testing.TB, ca *testCA, dir string, serial int64) map[string]string {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, serial)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFileAtomic(t, keyFile, keyPEM)
	writeFileAtomic(t, certFile, certPEM)
	return map[string]string{"PETSTORE_TLS_CERT_FILE": certFile, "PETSTORE_TLS_KEY_FILE": keyFile}
}

// tlsClient returns a client that trusts roots and speaks HTTP/2 only, or
// HTTP/1.1 only.
func tlsClient(t testing.TB, roots *x509.CertPool, http2 bool) *http.Client {
	var p http.Protocols
	p.SetHTTP1(!http2)
	p.SetHTTP2(http2)
	transport := &http.Transport{Proxy: nil, Protocols: &p, ForceAttemptHTTP2: http2, TLSClientConfig: &tls.Config{RootCAs: roots}}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: 10 * time.Second}
}

// servedSerial opens a new connection to addr and returns the serial of
// the certificate it is served.
func servedSerial(t testing.TB, addr string, roots *x509.CertPool) int64 {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// tlsServer is the server of newHTTPServer over TLS, built as run builds
// it, around a handler a test may wrap; conns is its connection limiter.
type tlsServer struct {
	addr  string
	roots *x509.CertPool
	conns *connlimit.Limiter
	env   *testEnv
	logs  *lockedBuffer // what the server logs
}

// startTLSServer serves the real handler (a memory store, testKey) over
// TLS with lim, at most maxConns connections, the handler wrapped by wrap.
func startTLSServer(t *testing.T, lim limits, maxConns int, wrap func(http.Handler) http.Handler) *tlsServer {
	t.Helper()
	ca := newTestCA(t)
	vars := tlsEnv(t, ca, t.TempDir(), 1)
	files, err := loadTLSFiles(newEnv(func(name string) string { return vars[name] }))
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.bodies = bodybudget.New(lim.bodyBudget, maxBodyBytes, lim.readTimeout) })
	logs := &lockedBuffer{}
	log := accesslog.NewJSONLogger(logs)
	conns := connlimit.New(maxConns, lim.idleTimeout)
	srv := newHTTPServer(wrap(env.handler), lim, conns, log)
	srv.TLSConfig = tlsreload.New(files, 2*time.Second, log).ServerConfig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); srv.ServeTLS(conns.Listen(ln), "", "") }()
	t.Cleanup(func() { srv.Close(); <-served })
	return &tlsServer{addr: ln.Addr().String(), roots: ca.roots, conns: conns, env: env, logs: logs}
}

// HTTP/2 frames (RFC 9113 section 4 and 6), written and read by hand.
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	frameGoAway       = 0x7
	frameContinuation = 0x9
	flagEndStream     = 0x1
	flagAck           = 0x1
	flagEndHeaders    = 0x4
	http2ClientMagic  = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	maxTestFrameBytes = 1 << 20
)

type frame struct {
	typ, flags byte
	stream     uint32
	payload    []byte
}

func writeFrame(w io.Writer, f frame) error {
	var head [9]byte
	head[0], head[1], head[2] = byte(len(f.payload)>>16), byte(len(f.payload)>>8), byte(len(f.payload))
	head[3], head[4] = f.typ, f.flags
	binary.BigEndian.PutUint32(head[5:], f.stream)
	_, err := w.Write(append(head[:], f.payload...))
	return err
}

func readFrame(r io.Reader) (frame, error) {
	var head [9]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return frame{}, err
	}
	n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
	if n > maxTestFrameBytes {
		return frame{}, io.ErrUnexpectedEOF
	}
	f := frame{typ: head[3], flags: head[4], stream: binary.BigEndian.Uint32(head[5:]) & 0x7fffffff, payload: make([]byte, n)}
	_, err := io.ReadFull(r, f.payload)
	return f, err
}

// hpackLiteral appends a header field to an HPACK block as a literal
// without indexing, its name and value not Huffman-coded (RFC 7541 6.2.2).
func hpackLiteral(block []byte, name, value string) []byte {
	block = append(block, 0)
	for _, s := range []string{name, value} {
		block = hpackInt(block, len(s))
		block = append(block, s...)
	}
	return block
}

// hpackInt appends n with a 7-bit prefix (RFC 7541 5.1), H clear.
func hpackInt(b []byte, n int) []byte {
	if n < 127 {
		return append(b, byte(n))
	}
	b, n = append(b, 127), n-127
	for n >= 128 {
		b, n = append(b, byte(n%128+128)), n/128
	}
	return append(b, byte(n))
}

// dialHTTP2 opens a TLS connection to addr that negotiated h2 and has sent
// the client preface and an empty SETTINGS frame.
func dialHTTP2(t *testing.T, addr string, roots *x509.CertPool) *tls.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if got := conn.ConnectionState().NegotiatedProtocol; got != "h2" {
		t.Fatalf("ALPN: got %q, want h2", got)
	}
	var out bytes.Buffer
	out.WriteString(http2ClientMagic)
	writeFrame(&out, frame{typ: frameSettings})
	if _, err := conn.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readFrames reads conn's frames into the channel it returns, which is
// closed when the connection ends; it acknowledges the server's SETTINGS.
func readFrames(conn net.Conn) <-chan frame {
	frames := make(chan frame, 1024)
	go func() {
		defer close(frames)
		for {
			f, err := readFrame(conn)
			if err != nil {
				return
			}
			if f.typ == frameSettings && f.flags&flagAck == 0 {
				writeFrame(conn, frame{typ: frameSettings, flags: flagAck})
			}
			frames <- f
		}
	}()
	return frames
}

// requestHeaders is the HPACK block of a request with a key.
func requestHeaders(method, path string, extra ...string) []byte {
	block := hpackLiteral(nil, ":method", method)
	block = hpackLiteral(block, ":scheme", "https")
	block = hpackLiteral(block, ":authority", "127.0.0.1")
	block = hpackLiteral(block, ":path", path)
	block = hpackLiteral(block, "authorization", "Bearer "+testKey)
	for i := 0; i+1 < len(extra); i += 2 {
		block = hpackLiteral(block, extra[i], extra[i+1])
	}
	return block
}

// waitServerClosed reads conn until the server closes it, bounded by d, and
// reports whether it did; what it sends meanwhile (a GOAWAY, an alert) is
// discarded.
func waitServerClosed(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		if _, err := conn.Read(buf); err != nil {
			ne, isNet := err.(net.Error)
			return !(isNet && ne.Timeout())
		}
	}
}
