package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/vfs/faultfs"
)

// opLog records the FaultFS operations on a set of paths.
type opLog struct {
	mu    sync.Mutex
	paths map[string]bool
	ops   []faultfs.Op
}

func watchOps(ffs *faultfs.FS, paths ...string) *opLog {
	l := &opLog{paths: map[string]bool{}}
	for _, p := range paths {
		l.paths[p] = true
	}
	ffs.SetHook(func(op faultfs.Op) error {
		if l.paths[op.Path] || l.paths[op.NewPath] {
			l.mu.Lock()
			l.ops = append(l.ops, op)
			l.mu.Unlock()
		}
		return nil
	})
	return l
}

func (l *opLog) kinds(path string) map[faultfs.OpKind]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := map[faultfs.OpKind]int{}
	for _, op := range l.ops {
		if op.Path == path || op.NewPath == path {
			n[op.Kind]++
		}
	}
	return n
}

// TestRecoverKeepsIndexesThatMatch: Recover of a segment whose index files
// already hold what the rule gives (the usual case after a crash: sealed
// segments) opens them, compares, and fsyncs them, and does nothing else
// to them: no create, write, truncation, removal or rename. The fsync is
// not skipped: the files were never synced here, and Recover leaves them
// durable.
func TestRecoverKeepsIndexesThatMatch(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	ffs := faultfs.New()
	opts := &Options{IndexIntervalBytes: 300}
	s, err := Create(ffs, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := &model{}
	fill(t, s, m, newGen(t, rng, 0), 150)
	// Close trims the indexes and adds the final time entry, as Seal does,
	// but syncs nothing.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := readSegmentFiles(t, dir, 0)
	offPath, timePath := IndexPath(dir, 0), TimeIndexPath(dir, 0)
	var infos []os.FileInfo
	for _, p := range []string{offPath, timePath} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, fi)
		if n, err := ffs.Unsynced(p); err != nil || n == 0 {
			t.Fatalf("%s: %d unsynced bytes (%v): the test needs an unsynced index", p, n, err)
		}
	}

	ops := watchOps(ffs, offPath, timePath)
	r, err := Open(ffs, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Recover()
	ffs.SetHook(nil)
	if err != nil || res.BytesCut != 0 || res.Batches != len(m.batches) {
		t.Fatalf("Recover = %+v, %v", res, err)
	}
	for i, p := range []string{offPath, timePath} {
		for kind, n := range ops.kinds(p) {
			if kind != faultfs.OpOpen && kind != faultfs.OpSync {
				t.Errorf("%s: Recover did %d %v operation(s) on an index that was already right", p, n, kind)
			}
		}
		if ops.kinds(p)[faultfs.OpSync] == 0 {
			t.Errorf("%s: not fsynced", p)
		}
		if n, err := ffs.Unsynced(p); err != nil || n != 0 {
			t.Errorf("%s: %d bytes not durable after Recover (%v)", p, n, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(fi, infos[i]) || !fi.ModTime().Equal(infos[i].ModTime()) {
			t.Errorf("%s: replaced or modified by Recover", p)
		}
	}
	after := readSegmentFiles(t, dir, 0)
	if !bytes.Equal(before.off, after.off) || !bytes.Equal(before.time, after.time) {
		t.Fatal("index bytes changed")
	}
	checkAgainst(t, r, m)
	if n := r.IndexRebuilds(); n != 0 {
		t.Fatalf("%d rebuilds after Recover", n)
	}
}

// TestRecoverRewritesIndexesInPlace: index files that do not hold what the
// rule gives (stale, garbage, a preallocated zero tail, missing) are
// rewritten under their own inode, never removed and created again, and
// end up exactly the rule's entries, durable.
func TestRecoverRewritesIndexesInPlace(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, rng, 150, opts)
	o, _ := opts.resolve()
	wantOff, wantTime := m.ruleEntries(o.IndexIntervalBytes, true)
	if len(wantOff) < 4 || len(wantTime) < 4 {
		t.Fatalf("too few entries to damage: %d, %d", len(wantOff), len(wantTime))
	}
	garbage := func(n int) []byte { b := make([]byte, n); rng.Read(b); return b }
	cases := map[string]crashFiles{
		"stale":     {log: c.log, off: c.off[:len(c.off)/16*8], time: c.time[:len(c.time)/24*12]},
		"garbage":   {log: c.log, off: garbage(len(c.off)), time: garbage(len(c.time))},
		"zero tail": {log: c.log, off: append(bytes.Clone(c.off), make([]byte, 8192)...), time: append(bytes.Clone(c.time), make([]byte, 12*700)...)},
		"odd size":  {log: c.log, off: append(bytes.Clone(c.off), 1, 2, 3), time: c.time[:len(c.time)-5]},
		"missing":   {log: c.log},
	}
	for name, cc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := segDir(t)
			writeSegmentFiles(t, dir, 0, cc)
			offPath, timePath := IndexPath(dir, 0), TimeIndexPath(dir, 0)
			infos := map[string]os.FileInfo{}
			for _, p := range []string{offPath, timePath} {
				if fi, err := os.Stat(p); err == nil {
					infos[p] = fi
				}
			}
			ffs := faultfs.New()
			ops := watchOps(ffs, offPath, timePath)
			s, err := Open(ffs, dir, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := s.Recover()
			ffs.SetHook(nil)
			if err != nil || res.BytesCut != 0 {
				t.Fatalf("Recover = %+v, %v", res, err)
			}
			gotOff, gotTime := readIndexFiles(t, dir, 0)
			if !equalEntries(gotOff, wantOff) || !equalEntries(gotTime, wantTime) {
				t.Fatalf("indexes after Recover:\n%v\n%v\nwant\n%v\n%v", gotOff, gotTime, wantOff, wantTime)
			}
			for _, p := range []string{offPath, timePath} {
				k := ops.kinds(p)
				if k[faultfs.OpRemove] != 0 || k[faultfs.OpRename] != 0 {
					t.Errorf("%s: removed or renamed (%v); it must be rewritten in place", p, k)
				}
				if n, err := ffs.Unsynced(p); err != nil || n != 0 {
					t.Errorf("%s: %d bytes not durable after Recover (%v)", p, n, err)
				}
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if old, ok := infos[p]; ok && !os.SameFile(fi, old) {
					t.Errorf("%s: a new file replaced the old one", p)
				}
			}
			checkAgainst(t, s, m)
			if n := s.IndexRebuilds(); n != 0 {
				t.Fatalf("%d rebuilds after Recover", n)
			}
		})
	}
}

// TestRebuildAtLoadKeepsTheGoodIndex: when only one index of a sealed
// segment fails its check at load, the rebuild rewrites that one and
// leaves the other's file as it was.
func TestRebuildAtLoadKeepsTheGoodIndex(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, rng, 120, opts)
	dir := segDir(t)
	cc := c
	cc.time = append(bytes.Clone(c.time), 9, 9, 9) // not whole entries
	writeSegmentFiles(t, dir, 0, cc)
	offPath := IndexPath(dir, 0)
	fi0, err := os.Stat(offPath)
	if err != nil {
		t.Fatal(err)
	}
	ffs := faultfs.New()
	ops := watchOps(ffs, offPath)
	s, err := Open(ffs, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkAgainst(t, s, m)
	ffs.SetHook(nil)
	if n := s.IndexRebuilds(); n != 1 {
		t.Fatalf("%d rebuilds, want 1", n)
	}
	for kind, n := range ops.kinds(offPath) {
		if kind != faultfs.OpOpen && kind != faultfs.OpSync {
			t.Errorf("%s: %d %v operation(s) on the index that was right", offPath, n, kind)
		}
	}
	fi, err := os.Stat(offPath)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(fi, fi0) || !fi.ModTime().Equal(fi0.ModTime()) {
		t.Fatal("the good index was replaced or modified")
	}
	got := readSegmentFiles(t, dir, 0)
	if !bytes.Equal(got.time, c.time) {
		t.Fatal("the rebuilt time index differs from the one Seal wrote")
	}
}

// TestFailedRepairKeepsTheSegmentUsable: when the rebuild of an index that
// failed a check in use cannot write the index files, the lookup reports
// the error; the segment does not keep serving from closed indexes (which
// would crash), reads work again once the disk does, an active segment
// refuses appends until Recover, and Recover restores it.
func TestFailedRepairKeepsTheSegmentUsable(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, rng, 120, opts)
	n := len(c.off) / index.OffsetEntrySize
	if n < 4 {
		t.Fatalf("%d offset entries, too few", n)
	}
	// A middle entry pointing inside its batch: the load-time check (last
	// entries only) passes, the lookup that uses it does not.
	bad := c
	bad.off = bytes.Clone(c.off)
	i := n / 2
	binary.BigEndian.PutUint32(bad.off[i*8+4:], binary.BigEndian.Uint32(bad.off[i*8+4:])+1)
	for _, active := range []bool{false, true} {
		dir := segDir(t)
		writeSegmentFiles(t, dir, 0, bad)
		ffs := faultfs.New()
		s, err := Open(ffs, dir, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		if active {
			if err := s.Activate(); err != nil {
				t.Fatal(err)
			}
		}
		ffs.SetHook(func(op faultfs.Op) error {
			if op.Path == IndexPath(dir, 0) && op.Kind == faultfs.OpCreate {
				return syscall.EIO
			}
			return nil
		})
		failed := 0
		for _, b := range m.batches {
			if _, err := s.FindPosition(b.h().LastOffset()); err != nil {
				if !errors.Is(err, syscall.EIO) {
					t.Fatalf("active %v: FindPosition: %v, want the injected EIO", active, err)
				}
				failed++
			}
		}
		if failed == 0 {
			t.Fatalf("active %v: no lookup reached the bad entry", active)
		}
		if active {
			if _, err := s.Append(newGen(t, rng, m.next()).batch()); !errors.Is(err, ErrFailed) {
				t.Fatalf("Append after a failed repair of the active segment = %v, want ErrFailed", err)
			}
		}
		ffs.SetHook(nil)
		checkAgainst(t, s, m)
		if active {
			if _, err := s.Recover(); err != nil {
				t.Fatal(err)
			}
			mm := &model{batches: m.batches}
			fill(t, s, mm, newGen(t, rng, m.next()), 5)
			checkAgainst(t, s, mm)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
