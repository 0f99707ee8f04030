//go:build !linux

package transport

import "net"

// cork is a no-op off Linux: the headers go out in their own segment.
func cork(net.Conn) (uncork func()) { return func() {} }
