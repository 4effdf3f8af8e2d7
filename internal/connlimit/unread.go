package connlimit

import (
	"net"
	"syscall"
)

// unread reports whether bytes the client sent wait in c's socket, not
// yet read by the server. It peeks at one byte, leaving it there; the
// socket is non-blocking, as every socket of Go's network poller is, so
// it returns at once when none has come.
func unread(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
	})
	return n > 0
}
