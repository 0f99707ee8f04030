package segment

import (
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// TestCloseIdleActiveReopensOnAppend: CloseIdle on the active segment gives
// back its files; the append state stays (NextOffset, Size and
// MaxTimestamp open nothing), a read reopens it, and so does the next
// Append, which goes on at the right place with the index rule intact.
func TestCloseIdleActiveReopensOnAppend(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	opts := &Options{IndexIntervalBytes: 300}
	s := mustCreate(t, dir, 0, opts)
	m := &model{}
	g := newGen(t, rng, 0)
	fill(t, s, m, g, 30)
	for round := range 5 {
		if err := s.CloseIdle(); err != nil {
			t.Fatal(err)
		}
		if s.Loaded() || s.Sealed() {
			t.Fatalf("round %d: loaded %v, sealed %v after CloseIdle; want neither", round, s.Loaded(), s.Sealed())
		}
		next, err := s.NextOffset()
		if err != nil || next != m.next() {
			t.Fatalf("NextOffset = %d, %v; want %d", next, err, m.next())
		}
		if size, err := s.Size(); err != nil || size != m.size() {
			t.Fatalf("Size = %d, %v; want %d", size, err, m.size())
		}
		if ts, err := s.MaxTimestamp(); err != nil || ts != m.maxTs() {
			t.Fatalf("MaxTimestamp = %d, %v; want %d", ts, err, m.maxTs())
		}
		if s.Loaded() {
			t.Fatal("the append state's accessors reopened the files")
		}
		if round%2 == 1 {
			checkAgainst(t, s, m) // a read reopens it
			if !s.Loaded() || s.Sealed() {
				t.Fatalf("after a read: loaded %v, sealed %v; want loaded and active", s.Loaded(), s.Sealed())
			}
		}
		fill(t, s, m, g, 10)
	}
	checkAgainst(t, s, m)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	offs, times := readIndexFiles(t, dir, 0)
	wantOffs, wantTimes := m.ruleEntries(300, true)
	if len(offs) != len(wantOffs) {
		t.Fatalf("offset index has %d entries, want %d", len(offs), len(wantOffs))
	}
	if len(times) < len(wantTimes) {
		t.Fatalf("time index has %d entries, want at least %d", len(times), len(wantTimes))
	}
	if s.IndexRebuilds() != 0 {
		t.Fatalf("%d index rebuilds; closing idle must leave the indexes valid", s.IndexRebuilds())
	}
}

// TestCloseIdleActiveIsDurable: batches written before the active segment
// was closed idle survive a power cut once Sync (or SyncLog) returned,
// though it then had no handle to fsync through: it opened the .log for
// the fsync. CloseIdle itself fsyncs nothing (closing an idle partition of
// a FlushNone topic must not cost an fsync).
func TestCloseIdleActiveIsDurable(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	ffs := faultfs.New()
	s, err := Create(ffs, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &model{}
	g := newGen(t, rng, 0)
	logPath := LogPath(dir, 0)
	for round, sync := range []func() error{s.Sync, s.SyncLog} {
		fill(t, s, m, g, 20)
		if err := s.CloseIdle(); err != nil {
			t.Fatal(err)
		}
		if n, err := ffs.Unsynced(logPath); err != nil || n == 0 {
			t.Fatalf("round %d: .log: %d unsynced bytes after CloseIdle (%v); it must not fsync", round, n, err)
		}
		if err := sync(); err != nil {
			t.Fatal(err)
		}
		if n, err := ffs.Unsynced(logPath); err != nil || n != 0 {
			t.Fatalf("round %d: .log: %d bytes not durable after CloseIdle and a sync (%v)", round, n, err)
		}
		if s.Loaded() {
			t.Fatalf("round %d: the sync reopened the segment", round)
		}
	}
	if err := ffs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, err := Open(ffs, dir, 0, nil)
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
