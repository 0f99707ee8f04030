package benchfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foliolog/folio/vfs"
)

// TestSlowSync: a .log file's Sync takes at least the delay and is still
// the file's own Sync; any other file is the FS's own, unwrapped.
func TestSlowSync(t *testing.T) {
	const delay = 50 * time.Millisecond
	fs := SlowSync(nil, delay)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		slow bool
	}{
		{"00000000000000000000.log", true},
		{"00000000000000000000.index", false},
		{"checkpoint", false},
	} {
		f, err := fs.OpenFile(filepath.Join(dir, tc.name), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if tc.slow && took < delay {
			t.Errorf("%s: Sync took %v, want at least %v", tc.name, took, delay)
		}
		if _, wrapped := f.(slowSyncFile); wrapped != tc.slow {
			t.Errorf("%s: wrapped %v, want %v (only .log files wait)", tc.name, wrapped, tc.slow)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFromEnv: unset leaves the FS as it is; a duration wraps it; a bad
// or negative one is an error that names the variable.
func TestFromEnv(t *testing.T) {
	t.Setenv(EnvFsyncDelay, "")
	if fs, err := FromEnv(vfs.Default); err != nil || fs != vfs.Default {
		t.Fatalf("unset: %v, %v", fs, err)
	}
	t.Setenv(EnvFsyncDelay, "2ms")
	fs, err := FromEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := fs.(slowSyncFS); !ok || s.delay != 2*time.Millisecond || s.FS != vfs.Default {
		t.Fatalf("2ms: %#v", fs)
	}
	for _, bad := range []string{"2", "soon", "-1ms"} {
		t.Setenv(EnvFsyncDelay, bad)
		if _, err := FromEnv(nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
