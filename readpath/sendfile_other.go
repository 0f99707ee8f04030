//go:build !linux

package readpath

import (
	"net"
	"os"
)

// sendFile declines off Linux: BSD and Darwin sendfile has other offset and
// partial-send semantics (golang/go#64044), so those platforms take the
// copying path, which is correct everywhere.
func sendFile(dst *net.TCPConn, src *os.File, pos int64, n int) (written int64, handled bool, err error) {
	return 0, false, nil
}
