package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

// crashFiles is a segment's three files as bytes.
type crashFiles struct {
	log, off, time []byte
}

func readSegmentFiles(t testing.TB, dir string, base int64) crashFiles {
	t.Helper()
	var c crashFiles
	for _, p := range []struct {
		dst  *[]byte
		path string
	}{{&c.log, LogPath(dir, base)}, {&c.off, IndexPath(dir, base)}, {&c.time, TimeIndexPath(dir, base)}} {
		b, err := os.ReadFile(p.path)
		if err != nil {
			t.Fatal(err)
		}
		*p.dst = b
	}
	return c
}

func writeSegmentFiles(t testing.TB, dir string, base int64, c crashFiles) {
	t.Helper()
	for _, p := range []struct {
		data []byte
		path string
	}{{c.log, LogPath(dir, base)}, {c.off, IndexPath(dir, base)}, {c.time, TimeIndexPath(dir, base)}} {
		if p.data == nil {
			continue
		}
		if err := os.WriteFile(p.path, p.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// crashSegment writes a segment of n generated batches, the last two
// small, closed without Seal, and returns its files and model.
func crashSegment(t testing.TB, rng *rand.Rand, base int64, n int, opts *Options) (crashFiles, *model) {
	t.Helper()
	dir := segDir(t)
	s, err := Create(testFS, dir, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := &model{base: base}
	g := newGen(t, rng, base)
	fill(t, s, m, g, n-2)
	for range 2 {
		b := buildBatch(t, m.next(), []int32{0, 1}, []int64{g.clock, g.clock + 1}, 40, rng)
		if _, err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		m.add(b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return readSegmentFiles(t, dir, base), m
}

// recoverAndCheck writes c into a fresh directory, opens and recovers it,
// and checks the result against the reference checker: the exact valid
// prefix, the bytes cut, indexes equal to the rule over that prefix, and
// (with full) every lookup.
func recoverAndCheck(t testing.TB, c crashFiles, base int64, opts *Options, full bool) RecoverResult {
	t.Helper()
	dir := segDir(t)
	writeSegmentFiles(t, dir, base, c)
	s, err := Open(testFS, dir, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Recover()
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	ref := refValidPrefix(c.log, base)
	want := RecoverResult{LastOffset: base - 1, MaxTimestamp: index.NoTimestamp}
	for _, b := range ref {
		want.ValidBytes = b.pos + b.size
		want.LastOffset = b.last
		want.MaxTimestamp = max(want.MaxTimestamp, b.maxTs)
	}
	want.Batches = len(ref)
	want.BytesCut = int64(len(c.log)) - want.ValidBytes
	if res.ValidBytes != want.ValidBytes || res.BytesCut != want.BytesCut || res.Batches != want.Batches ||
		res.LastOffset != want.LastOffset || res.MaxTimestamp != want.MaxTimestamp {
		t.Fatalf("Recover = %+v\nreference %+v", res, want)
	}
	if (res.BytesCut > 0) != (res.Cause != nil) || (res.Cause != nil && !errors.Is(res.Cause, ErrCorrupt)) {
		t.Fatalf("Cause %v with %d bytes cut", res.Cause, res.BytesCut)
	}
	fi, err := os.Stat(LogPath(dir, base))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != want.ValidBytes {
		t.Fatalf(".log is %d bytes after Recover, want %d", fi.Size(), want.ValidBytes)
	}
	m := modelOf(c.log, base)
	o, _ := opts.resolve()
	wantOff, wantTime := m.ruleEntries(o.IndexIntervalBytes, true)
	gotOff, gotTime := readIndexFiles(t, dir, base)
	if !equalEntries(gotOff, wantOff) || !equalEntries(gotTime, wantTime) {
		t.Fatalf("rebuilt indexes differ from a full scan:\n off  %v\n want %v\n time %v\n want %v", gotOff, wantOff, gotTime, wantTime)
	}
	if full {
		checkAgainst(t, s, m)
		if n := s.IndexRebuilds(); n != 0 {
			t.Fatalf("lookups after Recover rebuilt the indexes %d times", n)
		}
	}
	return res
}

func TestRecoverCutAtEveryByteOfTheTail(t *testing.T) {
	rng := testRand(t)
	const base = 40
	opts := &Options{IndexIntervalBytes: 256}
	c, m := crashSegment(t, rng, base, 30, opts)
	first := m.batches[len(m.batches)-2].pos
	for cut := first; cut <= int64(len(c.log)); cut++ {
		cc := c
		cc.log = c.log[:cut]
		res := recoverAndCheck(t, cc, base, opts, cut%17 == 0 || cut == first || cut == int64(len(c.log)))
		// Independent of the reference checker: a cut inside a batch loses
		// exactly that batch's partial bytes.
		wantValid := first
		if cut >= m.batches[len(m.batches)-1].pos {
			wantValid = m.batches[len(m.batches)-1].pos
		}
		if cut == int64(len(c.log)) {
			wantValid = cut
		}
		if res.ValidBytes != wantValid {
			t.Fatalf("cut at %d: valid %d, want %d", cut, res.ValidBytes, wantValid)
		}
	}
}

func TestRecoverBitFlips(t *testing.T) {
	rng := testRand(t)
	const base = 40
	opts := &Options{IndexIntervalBytes: 256}
	c, m := crashSegment(t, rng, base, 30, opts)
	last := m.batches[len(m.batches)-1]
	intact := len(m.batches)

	flip := func(pos int64, bit uint) crashFiles {
		cc := c
		cc.log = bytes.Clone(c.log)
		cc.log[pos] ^= 1 << bit
		return cc
	}
	// Every bit of the last batch's header, each field included.
	for i := int64(0); i < record.HeaderSize; i++ {
		for bit := range uint(8) {
			res := recoverAndCheck(t, flip(last.pos+i, bit), base, opts, i%8 == 0 && bit == 0)
			switch {
			case i >= 12 && i < 16: // partition leader epoch: outside the CRC
				if res.Batches != intact {
					t.Fatalf("flipping epoch bit %d.%d cut the batch", i, bit)
				}
			case i == 16 || i >= 17: // magic, CRC and everything it covers
				if res.Batches != intact-1 {
					t.Fatalf("flipping header byte %d bit %d kept the batch", i, bit)
				}
			}
		}
	}
	// Random flips anywhere in the last three batches.
	from := m.batches[len(m.batches)-3].pos
	for range 300 {
		pos := from + rng.Int63n(int64(len(c.log))-from)
		recoverAndCheck(t, flip(pos, uint(rng.Intn(8))), base, opts, false)
	}
	// Several bytes of garbage at once.
	for range 100 {
		cc := c
		cc.log = bytes.Clone(c.log)
		pos := from + rng.Int63n(int64(len(c.log))-from)
		n := 1 + rng.Intn(16)
		rng.Read(cc.log[pos:min(int64(len(cc.log)), pos+int64(n))])
		recoverAndCheck(t, cc, base, opts, false)
	}
}

func TestRecoverTails(t *testing.T) {
	rng := testRand(t)
	const base = 0
	opts := &Options{IndexIntervalBytes: 512}
	c, m := crashSegment(t, rng, base, 20, opts)
	lastBatch := m.batches[len(m.batches)-1].bytes

	dup := c
	dup.log = append(bytes.Clone(c.log), lastBatch...) // offsets do not ascend
	zeros := c
	zeros.log = append(bytes.Clone(c.log), make([]byte, 4096)...) // a preallocated tail
	garbage := c
	garbage.log = bytes.Clone(c.log)
	garbage.log = append(garbage.log, make([]byte, 777)...)
	rng.Read(garbage.log[len(c.log):])
	ahead := c // a valid batch, but after a gap of garbage
	ahead.log = append(append(bytes.Clone(c.log), 1, 2, 3), buildBatch(t, m.next(), []int32{0}, []int64{1}, 10, rng)...)
	intact := c
	noIndexes := crashFiles{log: c.log}

	for name, cc := range map[string]crashFiles{"duplicate": dup, "zeros": zeros, "garbage": garbage, "gap": ahead, "intact": intact, "no indexes": noIndexes} {
		res := recoverAndCheck(t, cc, base, opts, true)
		if res.ValidBytes != m.size() || res.Batches != len(m.batches) {
			t.Fatalf("%s: kept %d bytes, %d batches; want %d, %d", name, res.ValidBytes, res.Batches, m.size(), len(m.batches))
		}
	}
	// A segment whose first batch is below its base offset keeps nothing.
	// (The generator may start the first batch after a gap, so the base
	// is taken from it.)
	first := m.batches[0].h().BaseOffset()
	res := recoverAndCheck(t, c, first+1, opts, true)
	if res.ValidBytes != 0 || res.LastOffset != first {
		t.Fatalf("base above the first batch: %+v", res)
	}
}

func TestRecoverKeepsStateAndActivates(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	m := &model{}
	g := newGen(t, rng, 0)
	fill(t, s, m, g, 50)
	// Recover of the active segment leaves it active.
	res, err := s.Recover()
	if err != nil || res.BytesCut != 0 || res.Batches != 50 {
		t.Fatalf("Recover of an intact active segment: %+v, %v", res, err)
	}
	fill(t, s, m, g, 10)
	checkAgainst(t, s, m)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Open, Recover (sealed stays sealed), Activate, append.
	r := mustOpen(t, dir, 0, nil)
	if _, err := r.Recover(); err != nil {
		t.Fatal(err)
	}
	if !r.Sealed() {
		t.Fatal("Recover unsealed an opened segment")
	}
	if err := r.Activate(); err != nil {
		t.Fatal(err)
	}
	fill(t, r, m, g, 10)
	checkAgainst(t, r, m)
}

func TestPowerCutKeepsSyncedBatches(t *testing.T) {
	rng := testRand(t)
	for trial := range 5 {
		dir := segDir(t)
		ffs := faultfs.New()
		s, err := Create(ffs, dir, 0, &Options{IndexIntervalBytes: 300})
		if err != nil {
			t.Fatal(err)
		}
		m := &model{}
		g := newGen(t, rng, 0)
		fill(t, s, m, g, 10+rng.Intn(40))
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		synced := len(m.batches)
		fill(t, s, m, g, 1+rng.Intn(40))
		if trial%2 == 1 {
			// A torn write at the end.
			ffs.SetHook(func(op faultfs.Op) error {
				if op.Kind == faultfs.OpWrite && filepath.Ext(op.Path) == ".log" {
					return &faultfs.ShortWriteError{N: op.Len / 2, Err: syscall.EIO}
				}
				return nil
			})
			_, err := s.Append(g.batch())
			if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("torn append: %v, want ErrFailed wrapping EIO", err)
			}
			ffs.SetHook(nil)
		}
		if err := ffs.PowerCut(); err != nil {
			t.Fatal(err)
		}
		s.Close()

		r, err := Open(ffs, dir, 0, &Options{IndexIntervalBytes: 300})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Recover()
		if err != nil {
			t.Fatal(err)
		}
		if res.Batches != synced {
			t.Fatalf("trial %d: recovered %d batches, %d were synced (power cut keeps exactly the synced content)", trial, res.Batches, synced)
		}
		m.batches = m.batches[:synced]
		checkAgainst(t, r, m)
		r.Close()
	}
}

func TestFailStopUntilRecover(t *testing.T) {
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
	fill(t, s, m, g, 20)

	ffs.SetHook(faultfs.FailNthWhere(func(op faultfs.Op) bool {
		return op.Kind == faultfs.OpWrite && filepath.Ext(op.Path) == ".log"
	}, 1, &faultfs.ShortWriteError{N: 30, Err: syscall.ENOSPC}))
	if _, err := s.Append(g.batch()); !errors.Is(err, ErrFailed) || !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("failed write: %v, want ErrFailed and ErrNoSpace", err)
	}
	ffs.SetHook(nil)
	if _, err := s.Append(g.batch()); !errors.Is(err, ErrFailed) {
		t.Fatalf("append after a failed write: %v, want ErrFailed", err)
	}
	if err := s.Sync(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync after a failed write: %v, want ErrFailed", err)
	}
	checkAgainst(t, s, m) // readers still see every published batch

	res, err := s.Recover()
	if err != nil {
		t.Fatal(err)
	}
	if res.BytesCut != 30 || res.Batches != len(m.batches) {
		t.Fatalf("Recover after a torn write: %+v", res)
	}
	g.next = m.next()
	fill(t, s, m, g, 5)
	checkAgainst(t, s, m)

	// A failed fsync stops writes too.
	ffs.SetHook(faultfs.FailNth(faultfs.OpSync, 1, syscall.EIO))
	if err := s.Sync(); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("failed fsync: %v", err)
	}
	ffs.SetHook(nil)
	if _, err := s.Append(g.batch()); !errors.Is(err, ErrFailed) {
		t.Fatalf("append after a failed fsync: %v", err)
	}
}

func TestRecoverReportsFailedTruncate(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	m := &model{}
	fill(t, s, m, newGen(t, rng, 0), 10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ffs := faultfs.New()
	ffs.SetHook(faultfs.FailNthWhere(func(op faultfs.Op) bool {
		return op.Kind == faultfs.OpTruncate && filepath.Ext(op.Path) == ".log"
	}, 1, syscall.EIO))
	r, err := Open(ffs, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// An intact segment needs no truncation, so the hook does not fire.
	if res, err := r.Recover(); err != nil || res.BytesCut != 0 {
		t.Fatalf("Recover of an intact segment: %+v, %v", res, err)
	}
	c := readSegmentFiles(t, dir, 0)
	if int64(len(c.log)) != m.size() {
		t.Fatalf(".log is %d bytes, want %d", len(c.log), m.size())
	}
	// Now with a tail to cut and a truncate that fails: the error surfaces.
	if err := os.WriteFile(LogPath(dir, 0), append(c.log, 9, 9, 9), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Recover(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Recover with a failing truncate: %v, want EIO", err)
	}
}

func ExampleSegment_Recover() {
	dir, _ := os.MkdirTemp("", "segment-example")
	defer os.RemoveAll(dir)
	s, _ := Create(vfs.Default, dir, 0, nil)
	b, _ := record.NewBuilder(nil)
	for i := range 3 {
		b.Reset()
		b.BaseOffset = int64(i)
		b.Append(record.Record{Value: []byte("v"), Timestamp: 1000 + int64(i)})
		batch, _ := b.Build(nil)
		s.Append(batch)
	}
	s.Close()
	// A crash tears the last batch.
	path := LogPath(dir, 0)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-5], 0o644)

	r, _ := Open(vfs.Default, dir, 0, nil)
	defer r.Close()
	res, _ := r.Recover()
	fmt.Println("batches kept:", res.Batches, "last offset:", res.LastOffset, "bytes cut:", res.BytesCut)
	// Output: batches kept: 2 last offset: 1 bytes cut: 64
}
