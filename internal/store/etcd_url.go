package store

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"time"

	"petstore/internal/ascii"
	"petstore/internal/etcd"
	"petstore/internal/hostport"
)

// ErrCAFile: the file of CA certificates for an etcds:// cluster could not
// be read or holds none.
var ErrCAFile = etcd.ErrCAFile

// IsEtcdURL reports whether data names an etcd cluster (etcd:// or
// etcds://) rather than a journal file.
func IsEtcdURL(data string) bool {
	return strings.HasPrefix(data, "etcd://") || strings.HasPrefix(data, "etcds://")
}

// ParseEtcdURL reads etcd://HOST:PORT[,HOST:PORT…][/PREFIX] (etcds:// for
// TLS) into the endpoints and prefix of an EtcdConfig, with the default
// prefix and start timeout (docs/cluster.md). An URL never carries a user
// or password: they would show in ps and logs.
func ParseEtcdURL(data string) (EtcdConfig, error) {
	cfg := EtcdConfig{Prefix: "petstore", StartTimeout: DefaultEtcdStartTimeout}
	scheme, rest, _ := strings.Cut(data, "://")
	hosts, prefix, hasPrefix := strings.Cut(rest, "/")
	if strings.ContainsAny(hosts, "@?#") || strings.ContainsAny(prefix, "?#") {
		return cfg, errors.New("an etcd URL is etcd://HOST:PORT[,HOST:PORT…][/PREFIX], without user, password, query or fragment (use PETSTORE_ETCD_USER and PETSTORE_ETCD_PASSWORD_FILE)")
	}
	urlScheme := "http://"
	if scheme == "etcds" {
		urlScheme = "https://"
	}
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if _, perr := hostport.Port(port); err != nil || host == "" || perr != nil {
			return cfg, fmt.Errorf("etcd endpoint %q is not HOST:PORT (e.g. 127.0.0.1:2379; %v)", h, hostport.ErrPort)
		}
		cfg.Endpoints = append(cfg.Endpoints, urlScheme+net.JoinHostPort(host, port))
	}
	if hasPrefix {
		prefix = strings.Trim(prefix, "/")
		if !validEtcdPrefix(prefix) {
			return cfg, fmt.Errorf("etcd prefix %q must be segments of letters, digits and ._- separated by /", prefix)
		}
		cfg.Prefix = prefix
	}
	return cfg, nil
}

// DefaultEtcdStartTimeout is how long a start waits for the cluster unless
// configured otherwise.
const DefaultEtcdStartTimeout = 30 * time.Second

var etcdPrefixChars = ascii.SetOf(ascii.Letters, ascii.Digits, "._-")

// validEtcdPrefix reports whether prefix is segments of letters, digits
// and ._- separated by "/", none empty, "." or "..".
func validEtcdPrefix(prefix string) bool {
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "" || seg == "." || seg == ".." || !etcdPrefixChars.All(seg) {
			return false
		}
	}
	return true
}
