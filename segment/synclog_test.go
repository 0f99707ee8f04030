package segment

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// TestSyncLogFsyncsTheLogAlone: SyncLog fsyncs the .log and nothing else,
// and that is enough for the batches to survive a power cut: the reopened
// segment's Recover finds them all and rebuilds the indexes that were
// never synced.
func TestSyncLogFsyncsTheLogAlone(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	ffs := faultfs.New()
	opts := &Options{IndexIntervalBytes: 300}
	s, err := Create(ffs, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := &model{}
	fill(t, s, m, newGen(t, rng, 0), 80)
	logPath, offPath, timePath := LogPath(dir, 0), IndexPath(dir, 0), TimeIndexPath(dir, 0)
	var syncs []string
	ffs.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync {
			syncs = append(syncs, op.Path)
		}
		return nil
	})
	if err := s.SyncLog(); err != nil {
		t.Fatal(err)
	}
	ffs.SetHook(nil)
	if len(syncs) != 1 || syncs[0] != logPath {
		t.Fatalf("SyncLog fsynced %v, want only %s", syncs, logPath)
	}
	if n, err := ffs.Unsynced(logPath); err != nil || n != 0 {
		t.Fatalf(".log: %d bytes not durable after SyncLog (%v)", n, err)
	}
	for _, p := range []string{offPath, timePath} {
		if n, err := ffs.Unsynced(p); err != nil || n == 0 {
			t.Fatalf("%s: %d unsynced bytes (%v); SyncLog must leave the indexes alone", p, n, err)
		}
	}

	if err := ffs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, err := Open(ffs, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Recover()
	if err != nil || res.Batches != len(m.batches) || res.BytesCut != 0 {
		t.Fatalf("Recover after the power cut = %+v, %v; want all %d batches", res, err, len(m.batches))
	}
	checkAgainst(t, r, m)
}

// TestSyncLogFailureIsFailStop: a failed fsync in SyncLog makes the
// segment refuse writes, as Sync's does; SyncLog does nothing on a sealed
// segment and refuses a closed one.
func TestSyncLogFailureIsFailStop(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	ffs := faultfs.New()
	s, err := Create(ffs, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := &model{}
	g := newGen(t, rng, 0)
	fill(t, s, m, g, 10)
	ffs.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync && filepath.Ext(op.Path) == LogSuffix {
			return syscall.EIO
		}
		return nil
	})
	err = s.SyncLog()
	ffs.SetHook(nil)
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("SyncLog with a failing fsync = %v, want ErrFailed wrapping EIO", err)
	}
	if _, err := s.Append(g.batch()); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after a failed SyncLog = %v, want ErrFailed", err)
	}
	if err := s.SyncLog(); !errors.Is(err, ErrFailed) {
		t.Fatalf("SyncLog after a failure = %v, want ErrFailed", err)
	}
	if _, err := s.Recover(); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncLog(); err != nil {
		t.Fatalf("SyncLog after Recover: %v", err)
	}
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	var syncs int
	ffs.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync {
			syncs++
		}
		return nil
	})
	err = s.SyncLog()
	ffs.SetHook(nil)
	if err != nil || syncs != 0 {
		t.Fatalf("SyncLog of a sealed segment = %v with %d fsyncs, want nil and none", err, syncs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncLog(); !errors.Is(err, ErrClosed) {
		t.Fatalf("SyncLog after Close = %v, want ErrClosed", err)
	}
}
