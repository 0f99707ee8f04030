package faultfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/edsrzf/mmap-go"
)

// kills are the two ways a FS ends a handle generation.
var kills = []struct {
	name   string
	kill   func(*FS) error
	reason error
}{
	{"power cut", (*FS).PowerCut, ErrPowerCut},
	{"crash", func(fs *FS) error { fs.Crash(); return nil }, ErrCrashed},
}

// A cut kills the handle but leaves its descriptor to the handle's Close:
// code that holds OS() may be using the descriptor when the cut comes.
func TestDeadHandleKeepsDescriptorUntilClose(t *testing.T) {
	for _, c := range kills {
		t.Run(c.name, func(t *testing.T) {
			fs := New()
			dir := t.TempDir()
			name := filepath.Join(dir, "00000000000000000000.index")
			f := create(t, fs, name, "synced", true)
			syncDirT(t, fs, dir)
			osf := f.OS()
			if err := c.kill(fs); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Stat(); !errors.Is(err, c.reason) {
				t.Fatalf("Stat through the dead handle = %v, want %v", err, c.reason)
			}
			if f.OS() != osf {
				t.Fatal("OS() changed at the cut")
			}
			got, err := osf.Stat()
			if err != nil {
				t.Fatalf("the cut closed the descriptor under its user: %v", err)
			}
			onDisk, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(got, onDisk) {
				t.Fatal("the dead handle's descriptor is not the file's")
			}
			if err := f.Close(); !errors.Is(err, c.reason) {
				t.Fatalf("Close of the dead handle = %v, want %v", err, c.reason)
			}
			if _, err := osf.Stat(); !errors.Is(err, os.ErrClosed) {
				t.Fatalf("after Close the descriptor answers %v, want os.ErrClosed", err)
			}
			if err := f.Close(); !errors.Is(err, c.reason) {
				t.Fatalf("second Close of the dead handle = %v, want %v", err, c.reason)
			}
			if n := fs.OpenHandles(); n != 0 {
				t.Fatalf("OpenHandles = %d after the cut", n)
			}
		})
	}
}

// Mappers map a file through OS(), as the index package does when it seals
// a segment, while the FS cuts under them. mmap-go reads the
// descriptor with Fd(), outside any FS operation, so a cut that closed
// it would race with them (go test -race reports it) and could hand them a
// descriptor number already reused by another file; with the descriptor
// left to the handle's Close every mapping succeeds and shows the file.
func TestCutDoesNotCloseDescriptorUnderMapper(t *testing.T) {
	const (
		rounds  = 10
		mappers = 4
		size    = 4096
	)
	content := bytes.Repeat([]byte("folio-index-entry"), size/17+1)[:size]
	fs := New()
	dir := t.TempDir()
	for round := range rounds {
		c := kills[round%len(kills)]
		name := filepath.Join(dir, fmt.Sprintf("%020d.index", round))
		f := create(t, fs, name, string(content), true)
		syncDirT(t, fs, dir)

		var (
			stop, failed atomic.Bool
			maps         atomic.Int64
			wg           sync.WaitGroup
			errMu        sync.Mutex // guards firstErr
			firstErr     error
		)
		fail := func(err error) {
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
			failed.Store(true)
		}
		// waitMaps spins until the mappers have mapped n times in all (or
		// one failed): it takes no lock they take.
		waitMaps := func(n int64) {
			for maps.Load() < n && !failed.Load() {
				runtime.Gosched()
			}
		}
		for range mappers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					m, err := mmap.MapRegion(f.OS(), size, mmap.RDONLY, 0, 0)
					if err != nil {
						fail(fmt.Errorf("map through OS(): %w", err))
						return
					}
					same := bytes.Equal(m, content)
					if err := m.Unmap(); err != nil {
						fail(err)
						return
					}
					if !same {
						fail(errors.New("the mapping does not show the file"))
						return
					}
					maps.Add(1)
				}
			}()
		}
		// Cut once the mappers are running, and let them map the dead
		// handle's file for a while before its owner closes it.
		waitMaps(mappers)
		if err := c.kill(fs); err != nil {
			t.Fatal(err)
		}
		waitMaps(maps.Load() + 2*mappers)
		stop.Store(true)
		wg.Wait()
		if firstErr != nil {
			t.Fatalf("round %d (%s): %v", round, c.name, firstErr)
		}
		if err := f.Close(); !errors.Is(err, c.reason) {
			t.Fatalf("round %d: Close of the dead handle = %v, want %v", round, err, c.reason)
		}
	}
}
