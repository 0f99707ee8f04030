package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// noWriteFS is the file layer of the read-only logs under test: it fails
// the test on anything that would change the directory or a file (an open
// for writing or creating, rename, remove, mkdir, syncdir, and writes,
// syncs, truncations and allocations through a handle).
type noWriteFS struct {
	t     testing.TB
	inner vfs.FS
	open  atomic.Int64
}

func newNoWriteFS(t testing.TB) *noWriteFS { return &noWriteFS{t: t, inner: vfs.Default} }

func (n *noWriteFS) refuse(op, name string) error {
	n.t.Errorf("a read-only log tried to %s %s", op, name)
	return fmt.Errorf("noWriteFS: %s %s: %w", op, name, fs.ErrPermission)
}

func (n *noWriteFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND|os.O_EXCL) != 0 {
		return nil, n.refuse(fmt.Sprintf("open (flags %#x)", flag), name)
	}
	f, err := n.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	n.open.Add(1)
	return &noWriteFile{File: f, fs: n}, nil
}

func (n *noWriteFS) Rename(o, p string) error               { return n.refuse("rename", o+" to "+p) }
func (n *noWriteFS) Remove(name string) error               { return n.refuse("remove", name) }
func (n *noWriteFS) MkdirAll(p string, _ os.FileMode) error { return n.refuse("mkdir", p) }
func (n *noWriteFS) SyncDir(dir string) error               { return n.refuse("fsync directory", dir) }
func (n *noWriteFS) ReadDir(name string) ([]os.DirEntry, error) {
	return n.inner.ReadDir(name)
}
func (n *noWriteFS) Stat(name string) (os.FileInfo, error) { return n.inner.Stat(name) }

type noWriteFile struct {
	vfs.File
	fs     *noWriteFS
	closed atomic.Bool
}

func (f *noWriteFile) Write(p []byte) (int, error) { return 0, f.fs.refuse("write", f.Name()) }
func (f *noWriteFile) WriteAt(p []byte, off int64) (int, error) {
	return 0, f.fs.refuse("write", f.Name())
}
func (f *noWriteFile) Sync() error                 { return f.fs.refuse("fsync", f.Name()) }
func (f *noWriteFile) Truncate(int64) error        { return f.fs.refuse("truncate", f.Name()) }
func (f *noWriteFile) Allocate(int64, int64) error { return f.fs.refuse("allocate", f.Name()) }
func (f *noWriteFile) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.fs.open.Add(-1)
	}
	return f.File.Close()
}

// dirState is what a directory looks like from outside: every entry's
// name, size, mode and modification time, and the directory's own.
func dirState(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	out["."] = fmt.Sprintf("%v %v", fi.Mode(), fi.ModTime().UnixNano())
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%d %v %v", fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
	}
	return out
}

func sameDirState(t testing.TB, before, after map[string]string) {
	t.Helper()
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("%s disappeared", name)
		} else if a != b {
			t.Errorf("%s changed: %s, was %s", name, a, b)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared", name)
		}
	}
}

// openRO opens dir read-only through a noWriteFS whose BeforeFirstWrite
// fails the test, and closes it at the end of the test.
func openRO(t testing.TB, fsys *noWriteFS, dir string, o Options, st State) *Log {
	t.Helper()
	o.ReadOnly = true
	o.BeforeFirstWrite = func() error {
		t.Errorf("a read-only log called BeforeFirstWrite")
		return errors.New("no")
	}
	l, err := Open(fsys, dir, &o, st)
	if err != nil {
		t.Fatalf("open %s read-only: %v", dir, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestReadOnlyChangesNothing opens, reads, refreshes and closes a log
// read-only beside its live writer, in a directory that a writable open
// would have to repair (leftover files, an unclean state, the writer's
// preallocated index tails, a torn tail): nothing in the directory changes,
// no write is attempted, no goroutine is started, and the reader sees what
// the writer sees.
func TestReadOnlyChangesNothing(t *testing.T) {
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			wo := Options{SegmentBytes: 2048, IndexIntervalBytes: 1, FlushPolicy: FlushNone, ReadPath: kind}
			w := openT(t, nil, dir, &wo, State{})
			want := appendN(t, w, "c", 60, 3, 40)
			if w.Stats().Segments < 4 {
				t.Fatalf("only %d segments", w.Stats().Segments)
			}
			// Files a writable open would remove, and a torn tail.
			for _, name := range []string{
				segment.FileName(0, segment.LogSuffix+segment.DeletedSuffix),
				segment.FileName(3, segment.LogSuffix+".cleaned"),
				segment.FileName(99999, segment.IndexSuffix),
			} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("leftover"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			next := w.LogEndOffset()
			torn := makeBatch(t, "torn", next, 2, 40, 1)
			torn.SetBaseOffset(next)
			writeAtEnd(t, segment.LogPath(dir, lastBase(t, w)), torn[:len(torn)/2])
			// Seal what the writer rolled past now, so that its background
			// goroutine changes nothing from here on.
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			before := dirState(t, dir)

			fsys := newNoWriteFS(t)
			r := openRO(t, fsys, dir, Options{ReadPath: kind}, State{Clean: false})
			goleak.VerifyNone(t, goleak.IgnoreCurrent()) // the reader started no goroutine
			if r.LogEndOffset() != next || r.HighWatermark() != next || r.LogStartOffset() != 0 {
				t.Fatalf("read-only offsets start %d end %d hw %d; writer's end %d", r.LogStartOffset(), r.LogEndOffset(), r.HighWatermark(), next)
			}
			sameRecs(t, readAll(t, r, 0), want)
			if _, err := r.Read(next, 100); !errors.Is(err, ErrNoData) {
				t.Fatalf("read at the end: %v", err)
			}
			for _, ts := range []int64{0, 1000, 1017, 1059, 1060} {
				wo, wok, werr := w.OffsetForTime(time.UnixMilli(ts))
				ro, rok, rerr := r.OffsetForTime(time.UnixMilli(ts))
				if wo != ro || wok != rok || werr != nil || rerr != nil {
					t.Errorf("OffsetForTime(%d): read-only %d %v %v, writer %d %v %v", ts, ro, rok, rerr, wo, wok, werr)
				}
			}
			if err := r.Refresh(); err != nil {
				t.Fatal(err)
			}
			st := r.Stats()
			if st.Segments != w.Stats().Segments || st.Bytes != w.Stats().Bytes {
				t.Fatalf("read-only stats %+v, writer %+v", st, w.Stats())
			}
			refusesWrites(t, r)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if n := fsys.open.Load(); n != 0 {
				t.Fatalf("%d files left open after Close", n)
			}
			if err := r.Close(); !errors.Is(err, ErrClosed) {
				t.Fatalf("second Close: %v", err)
			}
			if err := r.Refresh(); !errors.Is(err, ErrClosed) {
				t.Fatalf("Refresh after Close: %v", err)
			}
			sameDirState(t, before, dirState(t, dir))
		})
	}
}

// refusesWrites checks that every writing call of a read-only log returns
// ErrReadOnly and changes nothing it reports.
func refusesWrites(t *testing.T, r *Log) {
	t.Helper()
	start, end := r.LogStartOffset(), r.LogEndOffset()
	if _, _, err := r.Append(makeBatch(t, "x", 0, 1, 10, 1)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Append: %v", err)
	}
	if err := r.Sync(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Sync: %v", err)
	}
	if err := r.TruncateTo(start); !errors.Is(err, ErrReadOnly) {
		t.Errorf("TruncateTo: %v", err)
	}
	if _, err := r.DeleteRecordsBefore(end); !errors.Is(err, ErrReadOnly) {
		t.Errorf("DeleteRecordsBefore: %v", err)
	}
	if _, err := r.EnforceRetention(time.Now().Add(100 * 365 * 24 * time.Hour)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("EnforceRetention: %v", err)
	}
	if err := r.SetHighWatermark(start); !errors.Is(err, ErrReadOnly) {
		t.Errorf("SetHighWatermark: %v", err)
	}
	if r.LogStartOffset() != start || r.LogEndOffset() != end {
		t.Errorf("offsets moved: [%d, %d) -> [%d, %d)", start, end, r.LogStartOffset(), r.LogEndOffset())
	}
	if err := r.Err(); err != nil {
		t.Errorf("Err of an open read-only log: %v", err)
	}
}

func lastBase(t testing.TB, l *Log) int64 {
	t.Helper()
	e, ok := l.snap.Load().segs.Max()
	if !ok {
		t.Fatal("no segments")
	}
	return e.base
}

// writeAtEnd appends b to the file at path behind the log's back.
func writeAtEnd(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyTornTail: half a batch at the end of the last segment is not
// visible; once the rest of it is written it is, at the next Refresh; a
// whole batch with a bad CRC is not. The writer's next append (which
// writes over the garbage) becomes visible.
func TestReadOnlyTornTail(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, nil, dir, &Options{FlushPolicy: FlushNone, IndexIntervalBytes: 100}, State{})
	want := appendN(t, w, "t", 10, 2, 30)
	end := w.LogEndOffset()
	path := segment.LogPath(dir, lastBase(t, w))
	b := makeBatch(t, "t", end, 3, 30, 2000)
	b.SetBaseOffset(end)

	r := openRO(t, newNoWriteFS(t), dir, Options{}, State{})
	ready, cancel := r.WaitChan(end)
	defer cancel()
	writeAtEnd(t, path, b[:record.HeaderSize+5])
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	if r.LogEndOffset() != end {
		t.Fatalf("end %d with a torn tail, want %d", r.LogEndOffset(), end)
	}
	if _, err := r.Read(end, 1000); !errors.Is(err, ErrNoData) {
		t.Fatalf("read of the torn batch: %v", err)
	}
	select {
	case <-ready:
		t.Fatal("WaitChan fired for a torn batch")
	default:
	}
	sameRecs(t, readAll(t, r, 0), want)

	// The rest of it arrives: a complete batch now.
	writeAtEnd(t, path, b[record.HeaderSize+5:])
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ready, "WaitChan after the batch completed")
	if r.LogEndOffset() != end+3 {
		t.Fatalf("end %d after the batch completed, want %d", r.LogEndOffset(), end+3)
	}
	got := readAll(t, r, end)
	if len(got) != 3 || got[0].offset != end || got[2].value != string(payload("t", end+2, 30)) {
		t.Fatalf("completed batch read back as %+v", got)
	}

	// A whole batch whose CRC does not match stays hidden.
	bad := makeBatch(t, "bad", end+3, 1, 30, 3000)
	bad.SetBaseOffset(end + 3)
	bad[len(bad)-1] ^= 0xff
	writeAtEnd(t, path, bad)
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	if r.LogEndOffset() != end+3 {
		t.Fatalf("end %d with a corrupt batch at the tail, want %d", r.LogEndOffset(), end+3)
	}

	// A fresh open finds the same end from the index.
	r2 := openRO(t, newNoWriteFS(t), dir, Options{}, State{})
	if r2.LogEndOffset() != end+3 {
		t.Fatalf("fresh read-only open: end %d, want %d", r2.LogEndOffset(), end+3)
	}
}

// TestReadOnlyIndexesAreHints reads a live writer's log, whose active index
// is preallocated with a zeroed tail and has an entry at every batch, at
// every offset and by time; then a copy of it with damaged indexes: every
// answer is the writer's.
func TestReadOnlyIndexesAreHints(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, nil, dir, &Options{FlushPolicy: FlushNone, IndexIntervalBytes: 1, SegmentBytes: 8192}, State{})
	var want []rec
	for i := 0; i < 120; i++ {
		want = append(want, appendOne(t, w, "i", int64(len(want)), 1+i%3, 20+i%30, 1000+int64(i)*10)...)
	}
	check := func(t *testing.T, r *Log) {
		t.Helper()
		if r.LogEndOffset() != w.LogEndOffset() {
			t.Fatalf("end %d, writer's %d", r.LogEndOffset(), w.LogEndOffset())
		}
		for _, x := range want {
			v, err := r.Read(x.offset, 1)
			if err != nil {
				t.Fatalf("read at %d: %v", x.offset, err)
			}
			_, recs, err := decodeView(v, x.offset)
			v.Release()
			if err != nil || len(recs) == 0 || recs[0] != x {
				t.Fatalf("read at %d: %+v, %v; want %+v first", x.offset, recs, err, x)
			}
		}
		for ts := int64(990); ts <= 1000+120*10+10; ts += 7 {
			wo, wok, werr := w.OffsetForTime(time.UnixMilli(ts))
			ro, rok, rerr := r.OffsetForTime(time.UnixMilli(ts))
			if wo != ro || wok != rok || werr != nil || rerr != nil {
				t.Fatalf("OffsetForTime(%d): read-only %d %v %v, writer %d %v %v", ts, ro, rok, rerr, wo, wok, werr)
			}
		}
	}
	t.Run("live", func(t *testing.T) {
		check(t, openRO(t, newNoWriteFS(t), dir, Options{}, State{}))
	})
	t.Run("damaged", func(t *testing.T) {
		cp := t.TempDir()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		rnd := newRand(testSeed(t))
		for _, e := range ents {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(e.Name(), ".tmp") {
				continue // the live writer's checkpoint, renamed since the listing
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, suffix, _ := segment.ParseFileName(e.Name()); suffix != segment.LogSuffix && len(data) > 0 {
				// Garbage over a random stretch of every index.
				from := rnd.IntN(len(data))
				for i := from; i < min(len(data), from+64); i++ {
					data[i] = byte(rnd.Uint32())
				}
			}
			if err := os.WriteFile(filepath.Join(cp, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		check(t, openRO(t, newNoWriteFS(t), cp, Options{}, State{}))
	})
}

// appendOne appends one batch of n records whose ids are their offsets,
// to a log whose offsets equal the ids so far.
func appendOne(t testing.TB, l *Log, tag string, id int64, n, size int, ts int64) []rec {
	t.Helper()
	first, _, err := l.Append(makeBatch(t, tag, id, n, size, ts))
	if err != nil {
		t.Fatal(err)
	}
	if first != id {
		t.Fatalf("append got offset %d, want %d", first, id)
	}
	out := make([]rec, n)
	for j := range out {
		o := id + int64(j)
		out[j] = rec{offset: o, key: fmt.Sprintf("k%d", o), value: string(payload(tag, o, size)), ts: ts}
	}
	return out
}

// TestReadOnlyFollowsTheWriter: Refresh follows rolls, deletions by
// retention (a read of a deleted segment becomes out of range), a
// truncation and what is appended after it.
func TestReadOnlyFollowsTheWriter(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, nil, dir, &Options{FlushPolicy: FlushNone, SegmentBytes: 1024, RetentionBytes: 3000}, State{})
	want := appendN(t, w, "f", 10, 2, 40)
	r := openRO(t, newNoWriteFS(t), dir, Options{}, State{})
	sameRecs(t, readAll(t, r, 0), want)

	want = append(want, appendN(t, w, "g", 30, 2, 40)...)
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	if r.LogEndOffset() != w.LogEndOffset() || r.Stats().Segments != w.Stats().Segments {
		t.Fatalf("after refresh: end %d, %d segments; writer %d, %d", r.LogEndOffset(), r.Stats().Segments, w.LogEndOffset(), w.Stats().Segments)
	}
	sameRecs(t, readAll(t, r, 0), want)

	// Retention deletes segments that a fresh reader has not loaded yet.
	r2 := openRO(t, newNoWriteFS(t), dir, Options{}, State{})
	oldStart := r2.LogStartOffset()
	if n, err := w.EnforceRetention(time.Now()); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	_, err := r2.Read(oldStart, 100)
	var oor *OffsetOutOfRangeError
	if !errors.As(err, &oor) || oor.Start != w.LogStartOffset() {
		t.Fatalf("read of a deleted segment: %v; want out of range with start %d", err, w.LogStartOffset())
	}
	if r2.LogStartOffset() != w.LogStartOffset() {
		t.Fatalf("start %d after the read found the segment gone, writer's %d", r2.LogStartOffset(), w.LogStartOffset())
	}
	// The first reader had them loaded; a Refresh moves its start.
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	if r.LogStartOffset() != w.LogStartOffset() {
		t.Fatalf("start %d after refresh, writer's %d", r.LogStartOffset(), w.LogStartOffset())
	}
	sameRecs(t, readAll(t, r, r.LogStartOffset()), want[r.LogStartOffset():])

	// A truncation into an earlier segment, then new records there.
	cut := w.LogEndOffset() - 25
	if err := w.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	cut = w.LogEndOffset()
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	if r.LogEndOffset() != cut {
		t.Fatalf("end %d after the writer truncated to %d", r.LogEndOffset(), cut)
	}
	want = want[:cut]
	for i := 0; i < 12; i++ {
		want = append(want, appendOne(t, w, "h", cut+int64(2*i), 2, 40, 5000)...)
	}
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	sameRecs(t, readAll(t, r, r.LogStartOffset()), want[r.LogStartOffset():])
	// r2 last listed before the truncation, which made an older segment
	// the last one again.
	if err := r2.Refresh(); err != nil {
		t.Fatal(err)
	}
	sameRecs(t, readAll(t, r2, r2.LogStartOffset()), want[r2.LogStartOffset():])
}

// TestReadOnlyMissingDir: a read-only open of a directory that does not
// exist fails and creates nothing.
func TestReadOnlyMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	o := Options{ReadOnly: true}
	if _, err := Open(newNoWriteFS(t), dir, &o, State{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open of a missing directory: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the directory was created: %v", err)
	}
	// An empty directory is an empty log at the checkpointed start.
	empty := t.TempDir()
	r := openRO(t, newNoWriteFS(t), empty, Options{}, State{LogStartOffset: 7})
	if r.LogStartOffset() != 7 || r.LogEndOffset() != 7 {
		t.Fatalf("empty read-only log [%d, %d)", r.LogStartOffset(), r.LogEndOffset())
	}
	if _, err := r.Read(7, 100); !errors.Is(err, ErrNoData) {
		t.Fatalf("read of an empty log: %v", err)
	}
}

// TestReadOnlyUnderCaps: the sealed segments of read-only logs count
// against the shared caps and are closed again when idle.
func TestReadOnlyUnderCaps(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, nil, dir, &Options{FlushPolicy: FlushNone, SegmentBytes: 1024}, State{})
	want := appendN(t, w, "c", 60, 2, 40)
	caps := NewResourceCaps(2)
	fsys := newNoWriteFS(t)
	r := openRO(t, fsys, dir, Options{Caps: caps}, State{})
	if r.Stats().Segments < 8 {
		t.Fatalf("only %d segments", r.Stats().Segments)
	}
	sameRecs(t, readAll(t, r, 0), want)
	if cs := caps.Stats(); cs.OpenSegments > 2 || cs.Evictions == 0 || r.Stats().OpenSealedSegments > 2 {
		t.Fatalf("caps %+v, log stats %+v", cs, r.Stats())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if fsys.open.Load() != 0 || caps.Stats().OpenSegments != 0 {
		t.Fatalf("after Close: %d files open, caps %+v", fsys.open.Load(), caps.Stats())
	}
}

// liveBatchLen is how many records the batch at base offset b holds in
// TestReadOnlyBesideLiveWriter: a function of b, so that a reader can check
// every batch it sees without asking the writer.
func liveBatchLen(b int64) int { return 1 + int(b%5) }

func liveValueSize(o int64) int { return 10 + int(o%60) }

func liveBatch(t testing.TB, base int64) record.Batch {
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	for o := base; o < base+int64(liveBatchLen(base)); o++ {
		if err := bld.Append(record.Record{Key: []byte(fmt.Sprintf("k%d", o)), Value: payload("live", o, liveValueSize(o)), Timestamp: 1000 + base}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkLiveView checks that a view read at from holds whole, valid batches
// that are exactly the writer's, the first holding from, and returns the
// offset after the last.
func checkLiveView(v *readpath.View, from int64) (int64, error) {
	var next int64
	err := readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		first := true
		for len(buf) > 0 {
			b, rest, err := record.Parse(buf) // a whole batch, CRC checked
			if err != nil {
				return fmt.Errorf("batch at offset %d: %w", next, err)
			}
			base := b.BaseOffset()
			if first && (base > from || b.LastOffset() < from) {
				return fmt.Errorf("read at %d starts with batch %d..%d", from, base, b.LastOffset())
			}
			if !first && base != next {
				return fmt.Errorf("batch at %d follows one ending at %d", base, next)
			}
			first = false
			if n := liveBatchLen(base); int(b.NumRecords()) != n || b.LastOffset() != base+int64(n)-1 {
				return fmt.Errorf("batch %d: %d records, last %d; the writer appended %d", base, b.NumRecords(), b.LastOffset(), n)
			}
			it := b.Records(nil)
			o := base
			for it.Next() {
				r := it.Record()
				if r.Offset() != o || string(r.Key()) != fmt.Sprintf("k%d", o) || string(r.Value()) != string(payload("live", o, liveValueSize(o))) || r.Timestamp() != 1000+base {
					it.Close()
					return fmt.Errorf("record %d of batch %d is not the writer's", o, base)
				}
				o++
			}
			err = it.Err()
			it.Close()
			if err != nil {
				return err
			}
			next = b.LastOffset() + 1
			buf = rest
		}
		return nil
	})
	return next, err
}

// TestReadOnlyBesideLiveWriter runs a writer (FlushNone, small segments,
// retention) appending in a goroutine while read-only logs of the same
// directory are opened, refreshed, read at random offsets and followed
// through WaitChan, over and over: every read returns whole valid batches
// equal to what the writer appended, and the readers never try to change
// anything.
func TestReadOnlyBesideLiveWriter(t *testing.T) {
	seed := testSeed(t)
	dir := t.TempDir()
	w := openT(t, nil, dir, &Options{FlushPolicy: FlushNone, SegmentBytes: 4096, IndexIntervalBytes: 300, RetentionBytes: 16 << 10, RetentionAge: -1}, State{})
	fsys := newNoWriteFS(t)
	stop := make(chan struct{})
	var writerDone sync.WaitGroup
	writerDone.Add(1)
	exited := make(chan struct{})
	go func() {
		defer writerDone.Done()
		defer close(exited)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			next := w.LogEndOffset()
			if _, _, err := w.Append(liveBatch(t, next)); err != nil {
				t.Error(err)
				return
			}
			if i%64 == 63 {
				if _, err := w.EnforceRetention(time.Now()); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()

	// The readers start once the writer is under way (a loaded machine may
	// otherwise run all their rounds before its first append).
	started, cancelStarted := w.WaitChan(64)
	select {
	case <-started:
	case <-exited: // the writer failed and said why
	}
	cancelStarted()

	var readers sync.WaitGroup
	var reads atomic.Int64
	reader := func(id int, kind readpath.Kind) {
		defer readers.Done()
		rnd := newRand(seed + uint64(id))
		for round := 0; round < 12 && !t.Failed(); round++ {
			o := Options{ReadOnly: true, ReadPath: kind, SegmentBytes: 4096}
			r, err := Open(fsys, dir, &o, State{})
			if err != nil {
				t.Errorf("reader %d: open: %v", id, err)
				return
			}
			for step := 0; step < 8 && !t.Failed(); step++ {
				if err := r.Refresh(); err != nil {
					t.Errorf("reader %d: refresh: %v", id, err)
					break
				}
				start, end := r.LogStartOffset(), r.LogEndOffset()
				if end <= start {
					continue
				}
				off := start + rnd.Int64N(end-start)
				if id%2 == 1 {
					// A follower: wait for what comes after the end.
					ready, cancel := r.WaitChan(end)
					for waited := 0; waited < 1000; waited++ {
						if err := r.Refresh(); err != nil {
							t.Errorf("reader %d: refresh: %v", id, err)
							break
						}
						select {
						case <-ready:
						default:
							time.Sleep(100 * time.Microsecond)
							continue
						}
						break
					}
					cancel()
					off = end
				}
				for off < r.HighWatermark() {
					v, err := r.Read(off, 1+rnd.IntN(3000))
					if errors.Is(err, ErrOffsetOutOfRange) {
						break // retention deleted it
					}
					if err != nil {
						t.Errorf("reader %d: read at %d: %v", id, off, err)
						break
					}
					next, err := checkLiveView(v, off)
					v.Release()
					if err != nil {
						t.Errorf("reader %d (%v): %v", id, kind, err)
						break
					}
					reads.Add(1)
					off = next
				}
			}
			if err := r.Close(); err != nil {
				t.Errorf("reader %d: close: %v", id, err)
			}
		}
	}
	for i := 0; i < 4; i++ {
		readers.Add(1)
		go reader(i, []readpath.Kind{readpath.Mmap, readpath.Sendfile}[i/2])
	}
	readers.Wait()
	close(stop)
	writerDone.Wait()
	if n := fsys.open.Load(); n != 0 {
		t.Errorf("%d files left open by closed readers", n)
	}
	t.Logf("%d reads; the writer got to offset %d in %d segments", reads.Load(), w.LogEndOffset(), w.Stats().Segments)
	if reads.Load() == 0 {
		t.Fatal("no read succeeded")
	}
	// At rest, a reader sees exactly the writer's log.
	r := openRO(t, fsys, dir, Options{}, State{})
	if r.LogStartOffset() != w.LogStartOffset() || r.LogEndOffset() != w.LogEndOffset() {
		t.Fatalf("at rest: read-only [%d, %d), writer [%d, %d)", r.LogStartOffset(), r.LogEndOffset(), w.LogStartOffset(), w.LogEndOffset())
	}
	var bases []int64
	for off := r.LogStartOffset(); off < r.LogEndOffset(); {
		v, err := r.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		next, err := checkLiveView(v, off)
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, off)
		off = next
	}
	if !slices.IsSorted(bases) || len(bases) == 0 {
		t.Fatalf("read back %d batches", len(bases))
	}
}

// TestReadOnlyReadBoundedFollowsTheEnd: a read-only log publishes its end
// for reads bounded by the log end as for those bounded by the high
// watermark, so both see what a Refresh found, across a roll.
func TestReadOnlyReadBoundedFollowsTheEnd(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, nil, dir, &Options{FlushPolicy: FlushNone, SegmentBytes: 1024}, State{})
	appendOne(t, w, "b", 0, 2, 40, 1000)
	r := openRO(t, newNoWriteFS(t), dir, Options{}, State{})
	for i := int64(2); i < 40; i += 2 {
		appendOne(t, w, "b", i, 2, 40, 1000+i)
		if err := r.Refresh(); err != nil {
			t.Fatal(err)
		}
		for _, bound := range []Bound{BoundHighWatermark, BoundLogEnd} {
			v, err := r.ReadBounded(i, 1, bound)
			if err != nil {
				t.Fatalf("read at %d to the %v after Refresh: %v", i, bound, err)
			}
			_, recs, err := decodeView(v, i)
			v.Release()
			if err != nil || len(recs) == 0 || recs[0].offset != i {
				t.Fatalf("read at %d to the %v: %+v, %v", i, bound, recs, err)
			}
			if _, err := r.ReadBounded(i+2, 1, bound); !errors.Is(err, ErrNoData) {
				t.Fatalf("read at the end %d to the %v: %v, want ErrNoData", i+2, bound, err)
			}
		}
	}
	if r.Stats().Segments < 2 {
		t.Fatalf("%d segments: the writer never rolled", r.Stats().Segments)
	}
}
