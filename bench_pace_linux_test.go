//go:build linux

package folio

import (
	"encoding/binary"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pacer ticks at a fixed interval for a goroutine that waits for each tick
// the way a server goroutine waits for its next request: parked in the
// runtime's network poller, woken when the kernel reports a timerfd
// expiry. time.Sleep and time.Ticker cannot pace at tens of microseconds
// on Linux (they wake 0.5 to 1 ms late: the runtime's poller sleeps in
// milliseconds), so a producer paced by them sends bursts of 10 to 20
// records, not a steady stream.
type pacer struct {
	f   *os.File
	buf [8]byte
}

func newPacer(interval time.Duration) (*pacer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	ts := unix.NsecToTimespec(int64(interval))
	if err := unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Interval: ts, Value: ts}, nil); err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("timerfd_settime", err)
	}
	// A non-blocking descriptor makes os.File read it through the poller.
	return &pacer{f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// wait blocks until the next tick and returns how many ticks passed since
// the previous wait: more than one when the caller fell behind.
func (p *pacer) wait() (int, error) {
	if _, err := io.ReadFull(p.f, p.buf[:]); err != nil {
		return 0, err
	}
	return int(binary.NativeEndian.Uint64(p.buf[:])), nil
}

func (p *pacer) close() error { return p.f.Close() }
