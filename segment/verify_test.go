package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/vfs"
)

// readOnlyFS refuses, and records, every call that could change anything:
// an open other than O_RDONLY, and every namespace change.
type readOnlyFS struct {
	vfs.FS
	mu      sync.Mutex
	refused []string
}

func (r *readOnlyFS) refuse(what string) error {
	r.mu.Lock()
	r.refused = append(r.refused, what)
	r.mu.Unlock()
	return fmt.Errorf("readOnlyFS: %s refused", what)
}

func (r *readOnlyFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if flag != os.O_RDONLY {
		return nil, r.refuse(fmt.Sprintf("open %s with flags %#x", name, flag))
	}
	return r.FS.OpenFile(name, flag, perm)
}
func (r *readOnlyFS) Rename(o, n string) error           { return r.refuse("rename " + o) }
func (r *readOnlyFS) Remove(name string) error           { return r.refuse("remove " + name) }
func (r *readOnlyFS) SyncDir(dir string) error           { return r.refuse("syncdir " + dir) }
func (r *readOnlyFS) MkdirAll(string, os.FileMode) error { return r.refuse("mkdir") }

type fileState struct {
	data  []byte
	mtime time.Time
	ok    bool
}

func segmentState(t testing.TB, dir string, base int64) [3]fileState {
	t.Helper()
	var st [3]fileState
	for i, p := range []string{LogPath(dir, base), IndexPath(dir, base), TimeIndexPath(dir, base)} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st[i] = fileState{data: data, mtime: fi.ModTime(), ok: true}
	}
	return st
}

// verifyUnchanged runs Verify through a file system that refuses any
// change, and checks that the files' bytes and mtimes are as before.
func verifyUnchanged(t testing.TB, dir string, base int64) Report {
	t.Helper()
	before := segmentState(t, dir, base)
	rfs := &readOnlyFS{FS: vfs.Default}
	r, err := Verify(rfs, dir, base)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if len(rfs.refused) > 0 {
		t.Fatalf("Verify tried to change things: %v", rfs.refused)
	}
	after := segmentState(t, dir, base)
	for i := range before {
		if before[i].ok != after[i].ok || !bytes.Equal(before[i].data, after[i].data) || !before[i].mtime.Equal(after[i].mtime) {
			t.Fatalf("Verify changed file %d of the segment", i)
		}
	}
	return r
}

func checkReportPrefix(t testing.TB, r Report, m *model) {
	t.Helper()
	if r.ValidBytes != m.size() || r.Batches != len(m.batches) || r.LastOffset != m.next()-1 || r.MaxTimestamp != m.maxTs() {
		t.Fatalf("Report prefix (%d bytes, %d batches, last %d, maxTs %d), model (%d, %d, %d, %d)",
			r.ValidBytes, r.Batches, r.LastOffset, r.MaxTimestamp, m.size(), len(m.batches), m.next()-1, m.maxTs())
	}
}

func TestVerifyCleanSegments(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	o, _ := opts.resolve()

	c, m := sealedSegment(t, rng, 150, opts)
	dir := segDir(t)
	writeSegmentFiles(t, dir, 0, c)
	r := verifyUnchanged(t, dir, 0)
	if !r.OK() {
		t.Fatalf("sealed segment: problems %v", r.Problems)
	}
	checkReportPrefix(t, r, m)
	offs, times := m.ruleEntries(o.IndexIntervalBytes, true)
	if r.LogBytes != m.size() || r.OffsetEntries != len(offs) || r.TimeEntries != len(times) || r.ZeroOffsetEntries != 0 || r.ZeroTimeEntries != 0 {
		t.Fatalf("sealed segment: %+v; want %d bytes, %d and %d entries", r, m.size(), len(offs), len(times))
	}

	// A live active segment: its indexes are allocated ahead of the
	// writer, so they end in zeros, which are not problems.
	dir = segDir(t)
	s := mustCreate(t, dir, 1000, opts)
	m = &model{base: 1000}
	fill(t, s, m, newGen(t, rng, 1000), 150)
	r = verifyUnchanged(t, dir, 1000)
	if !r.OK() {
		t.Fatalf("active segment: problems %v", r.Problems)
	}
	checkReportPrefix(t, r, m)
	offs, times = m.ruleEntries(o.IndexIntervalBytes, false)
	if r.OffsetEntries != len(offs) || r.TimeEntries != len(times) || r.ZeroOffsetEntries == 0 || r.ZeroTimeEntries == 0 {
		t.Fatalf("active segment: %+v; want %d and %d entries and a zero tail in both", r, len(offs), len(times))
	}

	// An empty segment.
	dir = segDir(t)
	e := mustCreate(t, dir, 7, nil)
	if err := e.Seal(); err != nil {
		t.Fatal(err)
	}
	r = verifyUnchanged(t, dir, 7)
	if !r.OK() || r.ValidBytes != 0 || r.Batches != 0 || r.LastOffset != 6 || r.MaxTimestamp != index.NoTimestamp {
		t.Fatalf("empty segment: %+v", r)
	}
}

// recoveredValidBytes is what Recover keeps of a copy of c.
func recoveredValidBytes(t testing.TB, c crashFiles) int64 {
	t.Helper()
	dir := segDir(t)
	writeSegmentFiles(t, dir, 0, c)
	s, err := Open(testFS, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Recover()
	if err != nil {
		t.Fatal(err)
	}
	return res.ValidBytes
}

func TestVerifyCorruptBatches(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, rng, 60, opts)
	k, k2 := 20, 40
	bad := bytes.Clone(c.log)
	for _, i := range []int{k, k2} {
		b := m.batches[i]
		bad[b.end()-1] ^= 0x40 // in the records: only the CRC notices
	}
	cc := c
	cc.log = bad
	dir := segDir(t)
	writeSegmentFiles(t, dir, 0, cc)
	r := verifyUnchanged(t, dir, 0)

	var logProblems []Problem
	for _, p := range r.Problems {
		if p.Path == LogPath(dir, 0) {
			logProblems = append(logProblems, p)
		} else if p.Position < 0 || !errors.Is(p, index.ErrCorrupt) {
			t.Fatalf("index problem %v: want a position and index.ErrCorrupt", p)
		}
	}
	if len(logProblems) != 2 || logProblems[0].Position != m.batches[k].pos || logProblems[1].Position != m.batches[k2].pos {
		t.Fatalf(".log problems %v; want the batches at %d and %d", logProblems, m.batches[k].pos, m.batches[k2].pos)
	}
	for _, p := range logProblems {
		if !errors.Is(p, ErrCorrupt) || p.Entry != -1 {
			t.Fatalf("problem %v: want ErrCorrupt and Entry -1", p)
		}
	}
	prefix := &model{batches: m.batches[:k]}
	checkReportPrefix(t, r, prefix)
	if got := recoveredValidBytes(t, cc); got != r.ValidBytes {
		t.Fatalf("Recover keeps %d bytes, Verify says %d are valid", got, r.ValidBytes)
	}
	// Entries of the batches after the first bad one point beyond the
	// valid prefix: each is a problem.
	o, _ := opts.resolve()
	offs, _ := m.ruleEntries(o.IndexIntervalBytes, true)
	beyond := 0
	for _, e := range offs {
		if e.Position >= m.batches[k].pos {
			beyond++
		}
	}
	n := 0
	for _, p := range r.Problems {
		if p.Path == IndexPath(dir, 0) {
			n++
		}
	}
	if beyond == 0 || n != beyond {
		t.Fatalf("%d .index problems, want one for each of the %d entries beyond the valid prefix", n, beyond)
	}

	// A broken length field ends the framing: nothing after it is checked.
	j := 30
	broken := bytes.Clone(c.log)
	binary.BigEndian.PutUint32(broken[m.batches[j].pos+8:], 1<<30)
	cc.log = broken
	dir = segDir(t)
	writeSegmentFiles(t, dir, 0, cc)
	r = verifyUnchanged(t, dir, 0)
	logProblems = logProblems[:0]
	for _, p := range r.Problems {
		if p.Path == LogPath(dir, 0) {
			logProblems = append(logProblems, p)
		}
	}
	if len(logProblems) != 1 || logProblems[0].Position != m.batches[j].pos || r.ValidBytes != m.batches[j].pos {
		t.Fatalf("broken length: .log problems %v, valid %d; want one at %d", logProblems, r.ValidBytes, m.batches[j].pos)
	}
	if got := recoveredValidBytes(t, cc); got != r.ValidBytes {
		t.Fatalf("Recover keeps %d bytes, Verify says %d are valid", got, r.ValidBytes)
	}
}

func TestVerifyCorruptIndexEntries(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, rng, 120, opts)
	nOff, nTime := len(c.off)/index.OffsetEntrySize, len(c.time)/index.TimeEntrySize
	if nOff < 6 || nTime < 6 {
		t.Fatalf("too few entries: %d, %d", nOff, nTime)
	}
	i := nOff / 2
	cc := c
	cc.off = bytes.Clone(c.off)
	p := binary.BigEndian.Uint32(cc.off[i*8+4:])
	binary.BigEndian.PutUint32(cc.off[i*8+4:], p+1) // inside the batch, not at its start
	// A time entry whose timestamp can go down by one and stay above the
	// one before it: still in order, but no batch has that maximum.
	cc.time = bytes.Clone(c.time)
	tsAt := func(k int) uint64 { return binary.BigEndian.Uint64(cc.time[k*12:]) }
	j := nTime / 2
	for j < nTime && tsAt(j)-tsAt(j-1) < 2 {
		j++
	}
	if j == nTime {
		t.Fatal("no time entry is 2 ms above the one before it; the generator changed")
	}
	binary.BigEndian.PutUint64(cc.time[j*12:], tsAt(j)-1)
	dir := segDir(t)
	writeSegmentFiles(t, dir, 0, cc)
	r := verifyUnchanged(t, dir, 0)
	checkReportPrefix(t, r, m)
	want := []Problem{
		{Path: IndexPath(dir, 0), Position: int64(i) * 8, Entry: i},
		{Path: TimeIndexPath(dir, 0), Position: int64(j) * 12, Entry: j},
	}
	if len(r.Problems) != len(want) {
		t.Fatalf("problems %v; want entry %d of the .index and %d of the .timeindex", r.Problems, i, j)
	}
	for k, p := range r.Problems {
		if p.Path != want[k].Path || p.Position != want[k].Position || p.Entry != want[k].Entry || !errors.Is(p, index.ErrCorrupt) {
			t.Fatalf("problem %d = %v; want %+v wrapping index.ErrCorrupt", k, p, want[k])
		}
	}

	// Out of order, a partial entry, and a missing file.
	cc = c
	cc.off = bytes.Clone(c.off)
	copy(cc.off[2*8:3*8], c.off[1*8:2*8]) // entry 2 repeats entry 1
	cc.time = append(bytes.Clone(c.time), 1, 2, 3)
	dir = segDir(t)
	writeSegmentFiles(t, dir, 0, cc)
	r = verifyUnchanged(t, dir, 0)
	var offEntries []int
	tail := false
	for _, p := range r.Problems {
		switch {
		case p.Path == IndexPath(dir, 0):
			offEntries = append(offEntries, p.Entry)
		case p.Path == TimeIndexPath(dir, 0) && p.Entry == -1 && p.Position == int64(len(c.time)):
			tail = true
		default:
			t.Fatalf("unexpected problem %v", p)
		}
	}
	if !tail || len(offEntries) == 0 {
		t.Fatalf("problems %v: want entry 2 of the .index and the partial .timeindex entry", r.Problems)
	}
	for _, e := range offEntries {
		if e != 2 {
			t.Fatalf("problems %v: only entry 2 of the .index is wrong", r.Problems)
		}
	}

	dir = segDir(t)
	writeSegmentFiles(t, dir, 0, crashFiles{log: c.log, time: c.time})
	r = verifyUnchanged(t, dir, 0)
	if len(r.Problems) != 1 || r.Problems[0].Path != IndexPath(dir, 0) || !errors.Is(r.Problems[0], fs.ErrNotExist) {
		t.Fatalf("missing .index: problems %v", r.Problems)
	}
	if _, err := os.Stat(IndexPath(dir, 0)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Verify created the missing index")
	}

	// No .log: an error, not a report.
	if _, err := Verify(nil, segDir(t), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Verify without a .log = %v, want fs.ErrNotExist", err)
	}
}
