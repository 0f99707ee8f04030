//go:build unix

package folio

import "syscall"

// openFilesLimit is the process's limit on open files (RLIMIT_NOFILE's
// soft limit, which the Go runtime raises to the hard one at start), and
// whether there is one to know.
func openFilesLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur <= 0 {
		return 0, false
	}
	return uint64(rl.Cur), true // int64 on some systems
}
