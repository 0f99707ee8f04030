package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"syscall"
	"testing"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

func TestAppendAndLookups(t *testing.T) {
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := testRand(t)
			dir := segDir(t)
			const base = 1000
			opts := &Options{ReadPath: kind}
			s := mustCreate(t, dir, base, opts)
			m := &model{base: base}
			checkAgainst(t, s, m) // empty
			fill(t, s, m, newGen(t, rng, base), 120)
			checkAgainst(t, s, m)

			if err := s.Seal(); err != nil {
				t.Fatal(err)
			}
			if !s.Sealed() {
				t.Fatal("not sealed after Seal")
			}
			checkAgainst(t, s, m)
			if _, err := s.Append(newGen(t, rng, m.next()).batch()); !errors.Is(err, ErrSealed) {
				t.Fatalf("Append after Seal: %v, want ErrSealed", err)
			}
		})
	}
}

func TestReadByteLimits(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	m := &model{}
	fill(t, s, m, newGen(t, rng, 0), 60)

	for range 400 {
		i := rng.Intn(len(m.batches))
		h := m.batches[i].h()
		off := h.BaseOffset() + rng.Int63n(int64(h.LastOffsetDelta())+1)
		maxBytes := rng.Intn(30000) - 100
		maxPos := int64(-1)
		if rng.Intn(3) == 0 {
			maxPos = rng.Int63n(m.size() + 100)
		}
		want := m.read(off, maxBytes, maxPos)
		v, err := s.Read(off, maxBytes, maxPos)
		if want == nil {
			if !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("Read(%d, %d, %d) = %v, want ErrOffsetOutOfRange", off, maxBytes, maxPos, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Read(%d, %d, %d): %v", off, maxBytes, maxPos, err)
		}
		got := viewBytes(t, v)
		if !bytes.Equal(got, want) {
			t.Fatalf("Read(%d, %d, %d): %d bytes, want %d", off, maxBytes, maxPos, len(got), len(want))
		}
		// Whole batches only, and at least one.
		if _, err := record.CheckHeader(got); err != nil || len(got) < record.Batch(got).Size() {
			t.Fatalf("Read(%d) does not start with a whole batch: %v", off, err)
		}
	}

	// A batch larger than the budget still comes back whole.
	big := buildBatch(t, m.next(), []int32{0}, []int64{1}, 50000, rng)
	if _, err := s.Append(big); err != nil {
		t.Fatal(err)
	}
	v, err := s.Read(big.BaseOffset(), 10, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := viewBytes(t, v); !bytes.Equal(got, big) {
		t.Fatalf("oversized batch: got %d bytes, want %d", len(got), len(big))
	}
}

func TestAppendRefusals(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	const base = 100
	s := mustCreate(t, dir, base, &Options{MaxBatchBytes: 4096, MaxSegmentBytes: 20000})
	good := buildBatch(t, base, []int32{0, 1, 2}, []int64{5, 6, 7}, 10, rng)
	if _, err := s.Append(good); err != nil {
		t.Fatal(err)
	}

	badCRC := bytes.Clone(buildBatch(t, 103, []int32{0}, []int64{1}, 10, rng))
	badCRC[len(badCRC)-1] ^= 1
	tooMany := buildBatch(t, 103, []int32{0, 1}, []int64{1, 2}, 10, rng)
	tooMany = bytes.Clone(tooMany)
	tooMany[26] = 0 // lastOffsetDelta 1 -> 0 with two records
	fixCRC(tooMany)

	cases := []struct {
		name string
		b    record.Batch
		want error
	}{
		{"too large", buildBatch(t, 103, []int32{0}, []int64{1}, 5000, rng), ErrBatchTooLarge},
		{"bad crc", badCRC, ErrInvalidBatch},
		{"short", good[:len(good)-1], ErrInvalidBatch},
		{"header only", good[:30], ErrInvalidBatch},
		{"empty", nil, ErrInvalidBatch},
		{"more records than offsets", tooMany, ErrInvalidBatch},
		{"repeats an offset", buildBatch(t, 102, []int32{0}, []int64{1}, 10, rng), ErrOffsetNotAscending},
		{"below the base", buildBatch(t, 5, []int32{0}, []int64{1}, 10, rng), ErrOffsetNotAscending},
		{"relative offset overflow", buildBatch(t, base+math.MaxInt32+1, []int32{0}, []int64{1}, 10, rng), ErrOffsetOverflow},
		{"last offset overflow", buildBatch(t, base+math.MaxInt32-1, []int32{0, 5}, []int64{1, 1}, 10, rng), ErrOffsetOverflow},
	}
	for _, c := range cases {
		_, err := s.Append(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Fill up to MaxSegmentBytes: the refused batch changes nothing.
	m := &model{base: base}
	m.add(good)
	next := int64(103)
	for {
		b := buildBatch(t, next, []int32{0}, []int64{1}, 3000, rng)
		_, err := s.Append(b)
		if errors.Is(err, ErrSegmentFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m.add(b)
		next++
	}
	if m.size()+3000 < 20000-4096 {
		t.Fatalf("ErrSegmentFull at %d bytes, limit 20000", m.size())
	}
	checkAgainst(t, s, m)
	// The lifecycle refusals.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(good); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := s.Read(base, 0, -1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// fixCRC recomputes a batch's CRC after a test edited covered bytes.
func fixCRC(b []byte) {
	h := record.Batch(b)
	crc := h.ComputeCRC()
	b[17], b[18], b[19], b[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
}

func TestIndexFullRefusesAppend(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	// Room for two offset entries; the time index (12-byte entries) holds one.
	s := mustCreate(t, dir, 0, &Options{IndexIntervalBytes: 1, MaxIndexBytes: 16})
	m := &model{}
	var err error
	for i := int64(0); ; i++ {
		b := buildBatch(t, i, []int32{0}, []int64{i}, 10, rng)
		if _, err = s.Append(b); err != nil {
			break
		}
		m.add(b)
	}
	if !errors.Is(err, ErrSegmentFull) || !errors.Is(err, index.ErrFull) {
		t.Fatalf("append into full indexes: %v, want ErrSegmentFull wrapping index.ErrFull", err)
	}
	checkAgainst(t, s, m)
}

func TestIndexRuleMatchesKafka(t *testing.T) {
	rng := testRand(t)
	for _, interval := range []int{1, 500, 4096} {
		dir := segDir(t)
		opts := &Options{IndexIntervalBytes: interval}
		s := mustCreate(t, dir, 7, opts)
		m := &model{base: 7}
		fill(t, s, m, newGen(t, rng, 7), 150)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Close of the active segment adds the final time entry, as Seal does.
		wantOff, wantTime := m.ruleEntries(interval, true)
		gotOff, gotTime := readIndexFiles(t, dir, 7)
		if !equalEntries(gotOff, wantOff) || !equalEntries(gotTime, wantTime) {
			t.Fatalf("interval %d: index entries differ from the rule:\n off  %v\n want %v\n time %v\n want %v", interval, gotOff, wantOff, gotTime, wantTime)
		}
		if interval == 4096 {
			// About one entry per interval (batches overshoot it by up to one).
			if n, hi := int64(len(gotOff)), m.size()/4096; n > hi || n < hi/4 {
				t.Fatalf("%d offset entries for %d bytes", n, m.size())
			}
		}
	}
}

// With equal batches of size B and an interval of exactly 2B, the byte
// count before batch i reaches 2B without passing it, so (Kafka's strict
// ">") the entries fall on batches 3, 6, 9, ...: hand-computed, not from
// the rule code.
func TestIndexRuleBoundary(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	first := buildBatch(t, 0, []int32{0}, []int64{10}, 50, rng)
	size := len(first)
	s := mustCreate(t, dir, 0, &Options{IndexIntervalBytes: 2 * size})
	for i := range 12 {
		b := buildBatch(t, int64(i), []int32{0}, []int64{10 + int64(i)}, 50, rng)
		if len(b) != size {
			t.Fatalf("batch %d is %d bytes, want %d", i, len(b), size)
		}
		if _, err := s.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	gotOff, gotTime := readIndexFiles(t, dir, 0)
	wantOff := []index.OffsetEntry{{Offset: 3, Position: 3 * int64(size)}, {Offset: 6, Position: 6 * int64(size)}, {Offset: 9, Position: 9 * int64(size)}}
	wantTime := []index.TimeEntry{{Timestamp: 13, Offset: 3}, {Timestamp: 16, Offset: 6}, {Timestamp: 19, Offset: 9}, {Timestamp: 21, Offset: 11}}
	if !equalEntries(gotOff, wantOff) || !equalEntries(gotTime, wantTime) {
		t.Fatalf("entries\n %v\n %v\nwant\n %v\n %v", gotOff, gotTime, wantOff, wantTime)
	}
}

func equalEntries[E comparable](a, b []E) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCleanReopenIsLazyAndRebuildsNothing(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	ffs := faultfs.New()
	const base = 500
	s, err := Create(ffs, dir, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &model{base: base}
	fill(t, s, m, newGen(t, rng, base), 200)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := ffs.OpenHandles(); n != 0 {
		t.Fatalf("%d handles open after Close", n)
	}

	maps0 := readpath.ReadCounters().Mappings
	r, err := Open(ffs, dir, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := ffs.OpenHandles(); n != 0 || r.Loaded() {
		t.Fatalf("Open opened %d files (loaded %v); it must open none", n, r.Loaded())
	}
	if r.BaseOffset() != base || !r.Sealed() {
		t.Fatalf("BaseOffset %d, Sealed %v", r.BaseOffset(), r.Sealed())
	}
	checkAgainst(t, r, m)
	if n := r.IndexRebuilds(); n != 0 {
		t.Fatalf("clean reopen rebuilt indexes %d times", n)
	}
	if !r.Loaded() {
		t.Fatal("not loaded after reads")
	}
	if err := r.CloseIdle(); err != nil {
		t.Fatal(err)
	}
	if n := ffs.OpenHandles(); n != 0 || r.Loaded() {
		t.Fatalf("CloseIdle left %d handles (loaded %v)", n, r.Loaded())
	}
	if got := readpath.ReadCounters().Mappings; got != maps0 {
		t.Fatalf("mappings %d after CloseIdle, %d before Open", got, maps0)
	}
	checkAgainst(t, r, m) // loads again
	if n := r.IndexRebuilds(); n != 0 {
		t.Fatalf("reload rebuilt indexes %d times", n)
	}
}

func TestReopenActiveAndContinue(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	m := &model{}
	g := newGen(t, rng, 0)
	fill(t, s, m, g, 80)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, dir, 0, nil)
	if err := r.Activate(); err != nil {
		t.Fatal(err)
	}
	if r.Sealed() {
		t.Fatal("sealed after Activate")
	}
	fill(t, r, m, g, 80)
	checkAgainst(t, r, m)
	if n := r.IndexRebuilds(); n != 0 {
		t.Fatalf("clean reopen of the active segment rebuilt indexes %d times", n)
	}
	if err := r.Seal(); err != nil {
		t.Fatal(err)
	}
	// The continued segment's indexes are what the rule gives for the whole
	// segment, except for the final time entry Close added at the restart
	// (a true entry, and skipped by the rule when the maximum did not grow).
	gotOff, _ := readIndexFiles(t, dir, 0)
	wantOff, _ := m.ruleEntries(DefaultIndexIntervalBytes, true)
	if !equalEntries(gotOff, wantOff) {
		t.Fatalf("offset index after restart differs from the rule:\n%v\n%v", gotOff, wantOff)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	dir := segDir(t)
	mustCreate(t, dir, 0, nil)
	if _, err := Create(vfs.Default, dir, 0, nil); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{IndexIntervalBytes: -1},
		{MaxIndexBytes: 8},
		{MaxBatchBytes: 60},
		{MaxSegmentBytes: math.MaxInt32 + 1},
		{MaxSegmentBytes: 10},
		{MaxBatchBytes: 1 << 20, MaxSegmentBytes: 1 << 19},
		{ReadPath: 9},
	}
	for _, o := range bad {
		if _, err := Create(vfs.Default, t.TempDir(), 0, &o); err == nil {
			t.Errorf("Options %+v accepted", o)
		}
	}
	if _, err := Create(vfs.Default, t.TempDir(), -1, nil); err == nil {
		t.Error("negative base accepted")
	}
	o, err := (*Options)(nil).resolve()
	if err != nil || o.IndexIntervalBytes != 4096 || o.MaxIndexBytes != 10<<20 || o.MaxBatchBytes != 1<<20+12 ||
		o.ReadPath != readpath.Mmap || o.MaxSegmentBytes != 1<<30 {
		t.Fatalf("defaults %+v, %v", o, err)
	}
	// A small segment clamps the default batch limit rather than failing.
	if o, err := (&Options{MaxSegmentBytes: 20000}).resolve(); err != nil || o.MaxBatchBytes != 20000 {
		t.Fatalf("MaxSegmentBytes 20000 gives MaxBatchBytes %d, %v", o.MaxBatchBytes, err)
	}
}

func TestFileNames(t *testing.T) {
	if got := FileName(368769, LogSuffix); got != "00000000000000368769.log" {
		t.Fatalf("FileName = %q", got)
	}
	cases := []struct {
		name   string
		base   int64
		suffix string
		ok     bool
	}{
		{"00000000000000368769.log", 368769, ".log", true},
		{"00000000000000000000.index", 0, ".index", true},
		{"00000000000000000042.log.deleted", 42, ".log.deleted", true},
		{"09223372036854775807.timeindex", math.MaxInt64, ".timeindex", true},
		{"09223372036854775808.log", 0, "", false}, // overflows int64
		{"0000000000000036876.log", 0, "", false},  // 19 digits
		{"00000000000000368769log", 0, "", false},
		{"00000000000000368769", 0, "", false},
		{"0000000000000036876x.log", 0, "", false},
		{"-0000000000000036876.log", 0, "", false},
		{"leader-epoch-checkpoint", 0, "", false},
	}
	for _, c := range cases {
		base, suffix, ok := ParseFileName(c.name)
		if ok != c.ok || (ok && (base != c.base || suffix != c.suffix)) {
			t.Errorf("ParseFileName(%q) = %d, %q, %v", c.name, base, suffix, ok)
		}
		if c.ok {
			if got := FileName(c.base, c.suffix); got != c.name {
				t.Errorf("FileName(%d, %q) = %q, want %q", c.base, c.suffix, got, c.name)
			}
		}
	}
	for _, base := range []int64{1, 9, 10, 99, 100, 1 << 31, 1e18, math.MaxInt64 - 1} {
		want := fmt.Sprintf("%020d.log", base)
		if got := FileName(base, LogSuffix); got != want {
			t.Errorf("FileName(%d) = %q, want %q", base, got, want)
		}
		if b, suffix, ok := ParseFileName(want); !ok || b != base || suffix != LogSuffix {
			t.Errorf("ParseFileName(%q) = %d, %q, %v", want, b, suffix, ok)
		}
	}
}

func TestDeleteWhileViewHeld(t *testing.T) {
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := testRand(t)
			dir := segDir(t)
			s, err := Create(vfs.Default, dir, 0, &Options{ReadPath: kind})
			if err != nil {
				t.Fatal(err)
			}
			m := &model{}
			fill(t, s, m, newGen(t, rng, 0), 40)
			v, err := s.Read(0, math.MaxInt32, -1)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 0 {
				t.Fatalf("files left after Delete: %v", entries)
			}
			var out bytes.Buffer
			if _, err := v.WriteTo(&out); err != nil {
				t.Fatal(err)
			}
			want := m.read(0, math.MaxInt32, -1)
			if got := viewBytes(t, v); !bytes.Equal(got, want) || !bytes.Equal(out.Bytes(), want) {
				t.Fatal("a view held across Delete reads different bytes")
			}
			if err := s.Delete(); !errors.Is(err, ErrClosed) {
				t.Fatalf("second Delete: %v", err)
			}
			if _, err := s.Read(0, 0, -1); !errors.Is(err, ErrClosed) {
				t.Fatalf("Read after Delete: %v", err)
			}
		})
	}
}

func TestDeleteLeavesDeletedFilesWhenUnlinkFails(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	ffs := faultfs.New()
	s, err := Create(ffs, dir, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, &model{base: 7}, newGen(t, rng, 7), 5)
	ffs.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpRemove {
			return syscall.EIO
		}
		return nil
	})
	if err := s.Delete(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Delete with failing unlinks: %v", err)
	}
	// The renames were made durable before the unlinks were tried, so a
	// power cut now keeps only the .deleted names, for startup to remove.
	ffs.SetHook(nil)
	if err := ffs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"00000000000000000007.index.deleted", "00000000000000000007.log.deleted", "00000000000000000007.timeindex.deleted"}
	if !equalEntries(names, want) {
		t.Fatalf("after Delete and a power cut: %v, want %v", names, want)
	}
}

func TestOpenMissingSegmentFailsOnUse(t *testing.T) {
	dir := segDir(t)
	s := mustOpen(t, dir, 0, nil)
	if _, err := s.NextOffset(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("NextOffset of a missing segment: %v", err)
	}
	if _, err := s.Read(0, 0, -1); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a missing segment: %v", err)
	}
	if err := s.Activate(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Activate of a missing segment: %v", err)
	}
}

func TestReloadsDoNotAccumulate(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	m := &model{}
	fill(t, s, m, newGen(t, rng, 0), 10)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		v, err := s.Read(0, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		v.Release()
		if err := s.CloseIdle(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Read(0, 0, -1); err != nil {
		t.Fatal(err)
	}
	s.resMu.RLock()
	n := len(s.inodeSources)
	s.resMu.RUnlock()
	if n > 2 {
		t.Fatalf("%d sources tracked after 50 reloads with every view released", n)
	}
}
