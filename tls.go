package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"petstore/internal/filewatch"
	"sync/atomic"
	"time"
)

// TLS (docs/operations.md, "TLS"): with PETSTORE_TLS_CERT_FILE and
// PETSTORE_TLS_KEY_FILE petstore serves HTTPS only, TLS 1.2 or newer, and
// offers HTTP/2 and HTTP/1.1 by ALPN. The pair is read again on SIGHUP and
// when either file changes, under the key file's stability rule; a bad pair
// never replaces the one in force.

// tlsFiles is the certificate and key pair of the configuration, as read
// at start.
type tlsFiles struct {
	certFile, keyFile string
	seen              []filewatch.Version // of both files, as they were read
	cert              *tls.Certificate
}

const (
	certVar = "PETSTORE_TLS_CERT_FILE"
	keyVar  = "PETSTORE_TLS_KEY_FILE"
)

// loadTLSFiles reads the pair the TLS variables name, or returns nil when
// neither is set. An error names the variable at fault, never key material.
func loadTLSFiles(getenv func(string) string) (*tlsFiles, error) {
	certFile, hasCert := lookup(getenv, certVar)
	keyFile, hasKey := lookup(getenv, keyVar)
	switch {
	case !hasCert && !hasKey:
		return nil, nil
	case !hasKey:
		return nil, fmt.Errorf("%s is set but %s is not: set both (HTTPS) or neither (plain HTTP)", certVar, keyVar)
	case !hasCert:
		return nil, fmt.Errorf("%s is set but %s is not: set both (HTTPS) or neither (plain HTTP)", keyVar, certVar)
	}
	watch := filewatch.New([]string{certFile, keyFile}, nil, 0)
	data, err := watch.Read()
	var cert *tls.Certificate
	if err == nil {
		cert, err = parsePair(certFile, keyFile, data[0], data[1])
	}
	if err != nil {
		name := certVar
		var pe *pairError
		if errors.As(err, &pe) {
			name = pe.variable
		} else if faultyFile(err) == keyFile {
			name = keyVar
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &tlsFiles{certFile: certFile, keyFile: keyFile, seen: watch.Seen(), cert: cert}, nil
}

// pairError is a pair that cannot serve, and the file at fault with the
// variable that names it (the two may name one file).
type pairError struct {
	file, variable string
	msg            string
}

func (e *pairError) Error() string { return e.file + ": " + e.msg }

// faultyFile returns the file an error of loading a pair names.
func faultyFile(err error) string {
	var pe *pairError
	if errors.As(err, &pe) {
		return pe.file
	}
	var fe *fs.PathError
	if errors.As(err, &fe) {
		return fe.Path
	}
	return ""
}

// parsePair returns the certificate of a PEM pair. Its errors name the file
// at fault: the certificate file when it holds no certificate that parses,
// the key file otherwise. They quote crypto/tls's messages, which name what
// is wrong and never the bytes.
func parsePair(certFile, keyFile string, certPEM, keyPEM []byte) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err == nil {
		return &cert, nil
	}
	if !holdsCertificate(certPEM) {
		return nil, &pairError{certFile, certVar, "holds no PEM CERTIFICATE block that parses as an X.509 certificate"}
	}
	return nil, &pairError{keyFile, keyVar, "holds no PEM private key that matches the certificate of " + certFile + " (" + err.Error() + ")"}
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

// tlsPair is the certificate petstore serves, put in force again by
// SIGHUP and by a change of its files (see watchReloads). Handshakes read
// it through an atomic pointer, without a lock. Logs name the files and
// the certificate's serial number, never key material.
type tlsPair struct {
	certFile, keyFile string
	watch             *filewatch.Watch
	log               *slog.Logger
	current           atomic.Pointer[tls.Certificate]
}

// newTLSPair serves the pair of files, read at start; a change is loaded
// once it has stayed unchanged for settle and a poll.
func newTLSPair(files *tlsFiles, settle time.Duration, log *slog.Logger) *tlsPair {
	p := &tlsPair{certFile: files.certFile, keyFile: files.keyFile, log: log,
		watch: filewatch.New([]string{files.certFile, files.keyFile}, files.seen, settle)}
	p.current.Store(files.cert)
	p.warnIfKeyShared()
	return p
}

// serverConfig is the TLS configuration of the server: TLS 1.2 or newer,
// the certificate in force. http.Server.ServeTLS adds the ALPN protocols.
func (p *tlsPair) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.current.Load(), nil
		},
	}
}

// reload reads the pair at once (SIGHUP) and puts it in force if it is good.
func (p *tlsPair) reload(why string) {
	data, err := p.watch.Read()
	p.load(why, data, err)
}

// poll puts a change of the pair in force once it has stayed put.
func (p *tlsPair) poll() {
	if data, due, err := p.watch.Poll(time.Now()); due {
		p.load("file changed", data, err)
	}
}

// load puts the pair of data (or err, the reason it could not be read) in
// force, or keeps the one in force and logs the file at fault.
func (p *tlsPair) load(why string, data [][]byte, err error) {
	var cert *tls.Certificate
	if err == nil {
		cert, err = parsePair(p.certFile, p.keyFile, data[0], data[1])
	}
	if err != nil {
		p.log.Error("TLS certificate not reloaded; the one in force stays", "reason", why, "file", faultyFile(err), "error", err.Error())
		return
	}
	p.current.Store(cert)
	if leaf := cert.Leaf; leaf != nil { // nil only under GODEBUG=x509keypairleaf=0
		p.log.Info("TLS certificate reloaded", "reason", why, "cert_file", p.certFile, "serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter)
	} else {
		p.log.Info("TLS certificate reloaded", "reason", why, "cert_file", p.certFile)
	}
	p.warnIfKeyShared()
}

// warnIfKeyShared warns when users other than petstore's own may read or
// change the key file. It does not refuse it: secrets mounted by
// Kubernetes are 0644 by default, in a directory of the pod's own, and a
// start that fails there would push people to a worse setting.
func (p *tlsPair) warnIfKeyShared() {
	info, err := os.Stat(p.keyFile)
	if err != nil || info.Mode().Perm()&0o077 == 0 {
		return
	}
	p.log.Warn("the TLS key file can be read or changed by other users; make it mode 0600", "file", p.keyFile, "mode", fmt.Sprintf("%04o", info.Mode().Perm()))
}
