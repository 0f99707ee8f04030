//go:build !linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fillPlatform on non-Linux systems asks sysctl and statfs in the BSD way:
// the filesystem name comes as a string there, no magic to map.
func fillPlatform(m *machine, dir string) {
	m.PageSize = os.Getpagesize()
	if s, err := unix.Sysctl("machdep.cpu.brand_string"); err == nil && s != "" {
		m.CPU = s
	}
	if n, err := unix.SysctlUint64("hw.memsize"); err == nil {
		m.MemBytes = n
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		m.Filesystem = unix.ByteSliceToString(st.Fstypename[:])
	}
}
