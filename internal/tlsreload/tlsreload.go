// Package tlsreload serves a TLS certificate from a pair of PEM files
// (certificate chain, private key) and puts a new pair in force, without a
// restart, when the files are read again: on demand (SIGHUP) or once a
// change of either has stayed put (see internal/filewatch).
//
// It promises that a pair that cannot serve (a file that cannot be read,
// holds no certificate, or a key that does not match) never replaces the
// one in force; that handshakes read the pair in force without a lock; and
// that errors and logs name the file at fault and the certificate's serial
// number, never key material. It warns when the key file may be read or
// changed by other users.
package tlsreload

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"petstore/internal/filewatch"
)

// Files is a certificate and key pair as read at start.
type Files struct {
	certFile, keyFile string
	seen              []filewatch.Version // of both files, as they were read
	cert              *tls.Certificate
}

// Load reads and parses the pair of certFile and keyFile. Its error is an
// *Error that names the file at fault.
func Load(certFile, keyFile string) (*Files, error) {
	watch := filewatch.New([]string{certFile, keyFile}, nil, 0)
	data, err := watch.Read()
	if err != nil {
		file := faultyFile(err)
		return nil, &Error{File: file, KeyFile: file == keyFile, err: err}
	}
	cert, err := parse(certFile, keyFile, data[0], data[1])
	if err != nil {
		return nil, err
	}
	return &Files{certFile: certFile, keyFile: keyFile, seen: watch.Seen(), cert: cert}, nil
}

// Error is why a pair cannot serve: File, the file at fault, cannot be
// read, holds no certificate, or holds no key that matches the
// certificate. KeyFile tells whether File is the key file (the two may be
// one file). Its text names File and never quotes the files' bytes.
type Error struct {
	File    string
	KeyFile bool
	err     error
}

func (e *Error) Error() string { return e.err.Error() }

func (e *Error) Unwrap() error { return e.err }

// faultyFile returns the file an error of loading a pair names.
func faultyFile(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.File
	}
	var fe *fs.PathError
	if errors.As(err, &fe) {
		return fe.Path
	}
	return ""
}

// parse returns the certificate of a PEM pair. Its errors name the file
// at fault: the certificate file when it holds no certificate that parses,
// the key file otherwise. They quote crypto/tls's messages, which name what
// is wrong and never the bytes.
func parse(certFile, keyFile string, certPEM, keyPEM []byte) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err == nil {
		return &cert, nil
	}
	if !holdsCertificate(certPEM) {
		return nil, &Error{File: certFile, err: errors.New(certFile + ": holds no PEM CERTIFICATE block that parses as an X.509 certificate")}
	}
	return nil, &Error{File: keyFile, KeyFile: true, err: errors.New(keyFile + ": holds no PEM private key that matches the certificate of " + certFile + " (" + err.Error() + ")")}
}

// holdsCertificate reports whether data's first CERTIFICATE block parses.
func holdsCertificate(data []byte) bool {
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			return false
		}
		if block.Type == "CERTIFICATE" {
			_, err := x509.ParseCertificate(block.Bytes)
			return err == nil
		}
	}
}

// Pair is the certificate served, put in force again by its Reloader.
// Handshakes read it through an atomic pointer, without a lock. Logs name
// the files and the certificate's serial number, never key material.
type Pair struct {
	certFile, keyFile string
	log               *slog.Logger
	current           atomic.Pointer[tls.Certificate]
	reloader          filewatch.Reloader
}

// New serves the pair of files, read at start; a change is loaded once it
// has stayed unchanged for settle and a poll. It warns now, and after each
// reload, if the key file is shared (see warnIfKeyShared).
func New(files *Files, settle time.Duration, log *slog.Logger) *Pair {
	p := &Pair{certFile: files.certFile, keyFile: files.keyFile, log: log}
	p.reloader = filewatch.Reloader{
		Watch:    filewatch.New([]string{files.certFile, files.keyFile}, files.seen, settle),
		Log:      log,
		Reloaded: "TLS certificate reloaded",
		Kept:     "TLS certificate not reloaded; the one in force stays",
		Load:     p.load,
		Loaded:   p.warnIfKeyShared,
	}
	p.current.Store(files.cert)
	p.warnIfKeyShared()
	return p
}

// ServerConfig is the TLS configuration of a server: TLS 1.2 or newer,
// the certificate in force. http.Server.ServeTLS adds the ALPN protocols.
func (p *Pair) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.current.Load(), nil
		},
	}
}

// Reloader reads the pair again, on SIGHUP or once a change has stayed
// put, and puts it in force if it is good.
func (p *Pair) Reloader() *filewatch.Reloader { return &p.reloader }

// load puts the pair of data in force, or returns the file at fault.
func (p *Pair) load(data [][]byte) ([]any, error) {
	cert, err := parse(p.certFile, p.keyFile, data[0], data[1])
	if err != nil {
		return []any{"file", faultyFile(err)}, err
	}
	p.current.Store(cert)
	if leaf := cert.Leaf; leaf != nil { // nil only under GODEBUG=x509keypairleaf=0
		return []any{"cert_file", p.certFile, "serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter}, nil
	}
	return []any{"cert_file", p.certFile}, nil
}

// warnIfKeyShared warns when users other than petstore's own may read or
// change the key file. It does not refuse it: secrets mounted by
// Kubernetes are 0644 by default, in a directory of the pod's own, and a
// start that fails there would push people to a worse setting.
func (p *Pair) warnIfKeyShared() {
	info, err := os.Stat(p.keyFile)
	if err != nil || info.Mode().Perm()&0o077 == 0 {
		return
	}
	p.log.Warn("the TLS key file can be read or changed by other users; make it mode 0600", "file", p.keyFile, "mode", fmt.Sprintf("%04o", info.Mode().Perm()))
}
