// Package hostport is the one grammar of the hosts and ports petstore
// reads from its configuration (the origins of PETSTORE_CORS_ORIGINS, the
// endpoints of an etcd cluster): a port is 1 to 65535 written plainly, a
// host a name of letters, digits, '-' and '_' between dots (an
// international name in its xn-- form), or an IP address.
package hostport

import (
	"errors"
	"net"
	"strconv"
	"strings"

	"petstore/internal/ascii"
)

var (
	// ErrPort: a port that is not 1 to 65535 written plainly (no sign, no
	// leading zero).
	ErrPort = errors.New("a port is 1 to 65535 written plainly")
	// ErrHost: a host that is neither a name nor an IP address.
	ErrHost = errors.New("a host is a name of letters, digits, '-' and dots (no wildcards; an international name in its xn-- form) or an IP address")
)

var labelChars = ascii.SetOf(ascii.Letters, ascii.Digits, "-_")

// Port returns the port p, or ErrPort.
func Port(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
		return 0, ErrPort
	}
	return n, nil
}

// Host returns nil when h is a host name or an IP address, else ErrHost.
func Host(h string) error {
	if net.ParseIP(h) != nil {
		return nil
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || !labelChars.All(label) {
			return ErrHost
		}
	}
	return nil
}
