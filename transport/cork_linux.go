package transport

import (
	"net"

	"golang.org/x/sys/unix"
)

// cork sets TCP_CORK on a TCP connection, so the pieces of one response
// (buffered headers, sendfile'd record bytes) leave in full segments, and
// returns the function that uncorks it (which sends what is left). Other
// connections (TLS, tests) are left alone.
func cork(nc net.Conn) (uncork func()) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return func() {}
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return func() {}
	}
	set := func(v int) {
		rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v) })
	}
	set(1)
	return func() { set(0) }
}
