// Package benchfs has file systems for benchmarks: they change what the
// disk costs, to show how Folio behaves on a disk other than the one the
// benchmark runs on. Nothing outside benchmarks uses it.
package benchfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/foliolog/folio/vfs"
)

// EnvFsyncDelay names the environment variable the benchmarks read for
// SlowSync's delay: a Go duration such as "1ms".
const EnvFsyncDelay = "FOLIO_BENCH_FSYNC_DELAY"

// FromEnv returns fs wrapped by SlowSync with the delay EnvFsyncDelay
// gives, or fs itself when the variable is unset (fs nil meaning
// vfs.Default).
func FromEnv(fs vfs.FS) (vfs.FS, error) {
	s := os.Getenv(EnvFsyncDelay)
	if s == "" {
		return fs, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = errors.New("negative")
	}
	if err != nil {
		return nil, fmt.Errorf("benchfs: %s=%q: want a duration such as 1ms: %w", EnvFsyncDelay, s, err)
	}
	return SlowSync(fs, d), nil
}

// SlowSync returns fs (vfs.Default when nil) with delay added after every
// Sync of a .log file: a device whose cache flush is slow, where an
// fsync's time is spent waiting on the device, not on a CPU. Overlapping
// Syncs wait side by side, as on a device that serves several flushes at
// once. Go's timers round short sleeps up (to about 1 ms on some virtual
// machines): benchmarks report the fsync times they saw.
func SlowSync(fs vfs.FS, delay time.Duration) vfs.FS {
	if fs == nil {
		fs = vfs.Default
	}
	return slowSyncFS{fs, delay}
}

type slowSyncFS struct {
	vfs.FS
	delay time.Duration
}

func (s slowSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Ext(name) != ".log" {
		return f, err
	}
	return slowSyncFile{f, s.delay}, nil
}

type slowSyncFile struct {
	vfs.File
	delay time.Duration
}

func (f slowSyncFile) Sync() error {
	err := f.File.Sync()
	time.Sleep(f.delay)
	return err
}
