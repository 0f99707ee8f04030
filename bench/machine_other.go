//go:build !linux

package main

import (
	"encoding/binary"
	"fmt"
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
	if la, err := unix.SysctlRaw("vm.loadavg"); err == nil && len(la) >= 24 {
		// struct loadavg: three fixed-point loads and their scale.
		ld := func(i int) float64 {
			return float64(binary.LittleEndian.Uint32(la[4*i:])) / float64(binary.LittleEndian.Uint64(la[16:]))
		}
		m.LoadAvg = fmt.Sprintf("%.2f %.2f %.2f", ld(0), ld(1), ld(2))
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
