//go:build unix

package folio

import (
	"syscall"
	"time"
)

// processUsage returns the CPU time the process has used (user and system,
// all threads) and its minor page faults so far.
func processUsage() (cpu time.Duration, minflt int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Minflt), true
}
