package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"hash/crc32"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

var seedFlag = flag.Int64("seed", 0, "seed for randomized tests (0: time-based); also FOLIO_SEED")

// testRand returns a seeded source and logs the seed so a failure can be
// replayed with -seed or FOLIO_SEED.
func testRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		if s := os.Getenv("FOLIO_SEED"); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("FOLIO_SEED=%q: %v", s, err)
			}
			seed = v
		}
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	return rand.New(rand.NewSource(seed))
}

// buildBatch encodes records at the given offset deltas and timestamps
// (one record each) with a value of valueSize random bytes.
func buildBatch(t testing.TB, base int64, deltas []int32, tss []int64, valueSize int, rng *rand.Rand) record.Batch {
	t.Helper()
	b, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	b.BaseOffset = base
	for i, d := range deltas {
		v := make([]byte, valueSize)
		rng.Read(v)
		if err := b.AppendAt(d, record.Record{Key: []byte{byte(i)}, Value: v, Timestamp: tss[i]}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gen makes random batches with ascending offsets: gaps between batches
// and inside them (as compaction leaves), timestamps that mostly rise but
// sometimes go back, and sizes from tiny to several index intervals.
type gen struct {
	t     testing.TB
	rng   *rand.Rand
	next  int64
	clock int64
}

func newGen(t testing.TB, rng *rand.Rand, base int64) *gen {
	return &gen{t: t, rng: rng, next: base, clock: 1_700_000_000_000}
}

func (g *gen) batch() record.Batch {
	r := g.rng
	if r.Intn(5) == 0 {
		g.next += int64(r.Intn(4)) // a gap before the batch
	}
	n := 1 + r.Intn(6)
	deltas := make([]int32, n)
	tss := make([]int64, n)
	d := int32(0)
	for i := range deltas {
		deltas[i] = d
		d += 1 + int32(r.Intn(2)*r.Intn(3)) // sometimes a gap inside
		g.clock += int64(r.Intn(20))
		tss[i] = g.clock
		switch r.Intn(10) {
		case 0:
			tss[i] = g.clock - int64(r.Intn(500)) // late
		case 1:
			tss[i] = g.clock + int64(r.Intn(500)) // early
		}
	}
	size := 10 + r.Intn(300)
	if r.Intn(8) == 0 {
		size = 2000 + r.Intn(9000)
	}
	b := buildBatch(g.t, g.next, deltas, tss, size/n, r)
	g.next = b.LastOffset() + 1
	return b
}

// mbatch is the model's copy of one appended batch.
type mbatch struct {
	pos   int64
	bytes []byte
}

func (b mbatch) h() record.Batch { return record.Batch(b.bytes) }
func (b mbatch) end() int64      { return b.pos + int64(len(b.bytes)) }

// model is what a segment should hold, answered by linear scans.
type model struct {
	base    int64
	batches []mbatch
}

func (m *model) add(b record.Batch) {
	m.batches = append(m.batches, mbatch{pos: m.size(), bytes: bytes.Clone(b)})
}

func (m *model) size() int64 {
	if len(m.batches) == 0 {
		return 0
	}
	return m.batches[len(m.batches)-1].end()
}

func (m *model) next() int64 {
	if len(m.batches) == 0 {
		return m.base
	}
	return m.batches[len(m.batches)-1].h().LastOffset() + 1
}

func (m *model) maxTs() int64 {
	ts := int64(index.NoTimestamp)
	for _, b := range m.batches {
		ts = max(ts, b.h().MaxTimestamp())
	}
	return ts
}

// find returns the index of the first batch whose last offset reaches
// offset, or -1.
func (m *model) find(offset int64) int {
	if offset < m.base {
		return -1
	}
	for i, b := range m.batches {
		if b.h().LastOffset() >= offset {
			return i
		}
	}
	return -1
}

func (m *model) offsetForTime(ts int64) (int64, bool) {
	for _, b := range m.batches {
		if b.h().MaxTimestamp() >= ts {
			return b.h().BaseOffset(), true
		}
	}
	return 0, false
}

// read is Read's contract by linear scan: the bytes, or nil when the read
// is out of range.
func (m *model) read(offset int64, maxBytes int, maxPosition int64) []byte {
	i := m.find(offset)
	if i < 0 {
		return nil
	}
	limit := m.size()
	if maxPosition >= 0 {
		limit = min(limit, maxPosition)
	}
	first := m.batches[i]
	if first.end() > limit {
		return nil
	}
	end := first.end()
	for j := i + 1; j < len(m.batches); j++ {
		e := m.batches[j].end()
		if e > limit || e-first.pos > int64(max(maxBytes, 0)) {
			break
		}
		end = e
	}
	var out []byte
	for j := i; j < len(m.batches) && m.batches[j].pos < end; j++ {
		out = append(out, m.batches[j].bytes...)
	}
	return out
}

// truncate keeps the batches whose last offset is below offset.
func (m *model) truncate(offset int64) {
	k := 0
	for k < len(m.batches) && m.batches[k].h().LastOffset() < offset {
		k++
	}
	m.batches = m.batches[:k]
}

// ruleEntries applies the index rule to the model's batches, written here
// independently of the package's indexer. sealed adds the final time entry.
func (m *model) ruleEntries(interval int, sealed bool) ([]index.OffsetEntry, []index.TimeEntry) {
	var offs []index.OffsetEntry
	var times []index.TimeEntry
	since := 0
	maxTs, maxOff := int64(-1), int64(-1)
	addTime := func(ts, off int64) {
		last := int64(-1)
		if len(times) > 0 {
			last = times[len(times)-1].Timestamp
		}
		if ts > last {
			times = append(times, index.TimeEntry{Timestamp: ts, Offset: off})
		}
	}
	for _, b := range m.batches {
		h := b.h()
		if h.MaxTimestamp() > maxTs {
			maxTs, maxOff = h.MaxTimestamp(), h.LastOffset()
		}
		if since > interval {
			offs = append(offs, index.OffsetEntry{Offset: h.LastOffset(), Position: b.pos})
			addTime(maxTs, maxOff)
			since = 0
		}
		since += len(b.bytes)
	}
	if sealed {
		addTime(maxTs, maxOff)
	}
	return offs, times
}

// readIndexFiles returns the entries of a segment's index files, read with
// the index package opened read-only.
func readIndexFiles(t testing.TB, dir string, base int64) ([]index.OffsetEntry, []index.TimeEntry) {
	t.Helper()
	off, err := index.OpenOffset(vfs.Default, IndexPath(dir, base), base, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	tm, err := index.OpenTime(vfs.Default, TimeIndexPath(dir, base), base, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	var offs []index.OffsetEntry
	for i := range off.Entries() {
		offs = append(offs, off.Entry(i))
	}
	var times []index.TimeEntry
	for i := range tm.Entries() {
		times = append(times, tm.Entry(i))
	}
	return offs, times
}

// refBatch is one batch the reference checker accepted.
type refBatch struct {
	pos, size     int64
	base, last    int64
	maxTs         int64
	records, epoc int32
}

var refCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// refValidPrefix is the test's own recovery rule, independent of the
// package: franz-go's kmsg parses each batch, the checks are written out
// again here. It returns the accepted batches; the valid prefix ends at the
// last one.
func refValidPrefix(data []byte, segBase int64) []refBatch {
	var out []refBatch
	pos := int64(0)
	prevLast := segBase - 1
	gapFree := true
	for {
		left := int64(len(data)) - pos
		if left < 61 {
			return out
		}
		length := int64(int32(binary.BigEndian.Uint32(data[pos+8:])))
		total := length + 12
		if length < 49 || total > left || pos+total > math.MaxInt32 {
			return out
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(data[pos : pos+total]); err != nil {
			return out
		}
		if rb.Magic != 2 || rb.LastOffsetDelta < 0 || rb.NumRecords < 0 || int64(rb.NumRecords) > int64(rb.LastOffsetDelta)+1 {
			return out
		}
		if rb.FirstOffset < segBase || rb.FirstOffset <= prevLast || rb.FirstOffset > math.MaxInt64-int64(rb.LastOffsetDelta) {
			return out
		}
		last := rb.FirstOffset + int64(rb.LastOffsetDelta)
		if last-segBase > math.MaxInt32 {
			return out
		}
		if crc32.Checksum(data[pos+21:pos+total], refCastagnoli) != uint32(rb.CRC) {
			return out
		}
		if np := pos + total; gapFree && rb.FirstOffset != prevLast+1 && int64(len(data))-np >= 61 {
			// The first gap of the segment, and a framed header after it
			// that lies inside the batch's offsets, where the batch moved
			// back right after prevLast would end just before it, and the
			// batch after that one (if framed) follows it without a gap
			// or lies inside the batch's offsets too: the batch's base
			// offset is the damaged one (Misplaced).
			framed := func(h []byte) (base, last, size int64, ok bool) {
				if len(h) < 61 {
					return 0, 0, 0, false
				}
				l, d, c := int32(binary.BigEndian.Uint32(h[8:])), int32(binary.BigEndian.Uint32(h[23:])), int32(binary.BigEndian.Uint32(h[57:]))
				if h[16] != 2 || l < 49 || d < 0 || c < 0 {
					return 0, 0, 0, false
				}
				base = int64(binary.BigEndian.Uint64(h))
				return base, base + int64(d), int64(l) + 12, true
			}
			if next, nlast, nsize, ok := framed(data[np:]); ok && next > prevLast && next <= last && next == prevLast+1+int64(rb.LastOffsetDelta)+1 {
				misplaced := true
				if dp := np + nsize; dp < int64(len(data)) {
					if d, _, _, ok := framed(data[dp:]); ok && d != nlast+1 && d > last {
						misplaced = false
					}
				}
				if misplaced {
					return out
				}
			}
		}
		out = append(out, refBatch{pos: pos, size: total, base: rb.FirstOffset, last: last, maxTs: rb.MaxTimestamp, records: rb.NumRecords, epoc: rb.PartitionLeaderEpoch})
		gapFree = gapFree && rb.FirstOffset == prevLast+1
		prevLast = last
		pos += total
	}
}

// modelOf builds a model from the reference checker's batches of data.
func modelOf(data []byte, base int64) *model {
	m := &model{base: base}
	for _, b := range refValidPrefix(data, base) {
		m.add(record.Batch(data[b.pos : b.pos+b.size]))
	}
	return m
}

// viewBytes copies a view's bytes and releases it.
func viewBytes(t testing.TB, v *readpath.View) []byte {
	t.Helper()
	defer v.Release()
	var out []byte
	err := readpath.Guard(func() error {
		b, err := v.Bytes()
		out = bytes.Clone(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkAgainst compares every lookup of s with the model: FindPosition and
// a one-batch Read of every offset around the segment, OffsetForTime of
// every batch's max timestamp and its neighbours, and the tip.
func checkAgainst(t testing.TB, s *Segment, m *model) {
	t.Helper()
	next, err := s.NextOffset()
	if err != nil {
		t.Fatal(err)
	}
	size, err := s.Size()
	if err != nil {
		t.Fatal(err)
	}
	maxTs, err := s.MaxTimestamp()
	if err != nil {
		t.Fatal(err)
	}
	if next != m.next() || size != m.size() || maxTs != m.maxTs() {
		t.Fatalf("tip (next %d, size %d, maxTs %d), model (%d, %d, %d)", next, size, maxTs, m.next(), m.size(), m.maxTs())
	}
	for off := m.base - 2; off <= m.next()+1; off++ {
		pos, err := s.FindPosition(off)
		i := m.find(off)
		if i < 0 {
			if !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("FindPosition(%d) = %d, %v; want ErrOffsetOutOfRange", off, pos, err)
			}
			continue
		}
		if err != nil || pos != m.batches[i].pos {
			t.Fatalf("FindPosition(%d) = %d, %v; want %d", off, pos, err, m.batches[i].pos)
		}
		v, err := s.Read(off, 0, -1)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if got := viewBytes(t, v); !bytes.Equal(got, m.batches[i].bytes) {
			t.Fatalf("Read(%d) gave %d bytes at %d, want the batch at %d", off, len(got), v.Pos(), m.batches[i].pos)
		}
	}
	tss := []int64{math.MinInt64, -1, 0, math.MaxInt64}
	for _, b := range m.batches {
		ts := b.h().MaxTimestamp()
		tss = append(tss, ts-1, ts, ts+1)
	}
	for _, ts := range tss {
		got, ok, err := s.OffsetForTime(ts)
		want, wok := m.offsetForTime(ts)
		if err != nil || ok != wok || got != want {
			t.Fatalf("OffsetForTime(%d) = %d, %v, %v; want %d, %v", ts, got, ok, err, want, wok)
		}
	}
}

// segDir returns a fresh directory for a test's segments. It prefers a
// memory file system (/dev/shm) when there is one: the crash tests create
// thousands of files, and on a busy disk each create costs milliseconds.
func segDir(t testing.TB) string {
	t.Helper()
	parent := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		parent = "/dev/shm"
	}
	d, err := os.MkdirTemp(parent, "segment-test-")
	if err != nil {
		d = t.TempDir()
	} else {
		top := d // d changes below; remove the whole temporary directory
		t.Cleanup(func() { os.RemoveAll(top) })
	}
	d = filepath.Join(d, "topic-0")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// mustCreate creates a segment and registers its Close.
func mustCreate(t testing.TB, dir string, base int64, opts *Options) *Segment {
	t.Helper()
	s, err := Create(testFS, dir, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustOpen(t testing.TB, dir string, base int64, opts *Options) *Segment {
	t.Helper()
	s, err := Open(testFS, dir, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fill appends n generated batches to s and to m.
func fill(t testing.TB, s *Segment, m *model, g *gen, n int) {
	t.Helper()
	for range n {
		b := g.batch()
		pos, err := s.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		if pos != m.size() {
			t.Fatalf("Append at %d, want %d", pos, m.size())
		}
		m.add(b)
	}
}

// fastFS is the OS file system with fsync turned off, for tests of logic
// rather than durability (those use faultfs.FS): a fsync costs
// milliseconds on a shared test disk and recovery tests do thousands.
type fastFS struct{ vfs.OSFS }

func (fastFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := vfs.OSFS{}.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return fastFile{f}, nil
}

func (fastFS) SyncDir(string) error { return nil }

type fastFile struct{ vfs.File }

func (fastFile) Sync() error { return nil }

var testFS vfs.FS = fastFS{}
