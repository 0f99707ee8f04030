//go:build !unix

package folio

import (
	"fmt"
	"runtime"
)

// dirLock would hold the data directory's lock; platforms without flock
// have none, and Open refuses to write a directory it cannot lock.
type dirLock struct{}

func lockDir(dir string) (*dirLock, error) {
	return nil, fmt.Errorf("folio: %s: directory locking is not implemented on %s; only OpenReadOnly works here", dir, runtime.GOOS)
}

func (l *dirLock) unlock() error { return nil }
