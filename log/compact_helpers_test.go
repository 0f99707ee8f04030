package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// kv is one record a compaction test writes; a nil value is a tombstone.
type kv struct {
	key   string
	value []byte
}

// producer fields of a test batch; pid < 0 means none.
type prodInfo struct {
	pid   int64
	epoch int16
	seq   int32
}

var noProducer = prodInfo{pid: -1, epoch: -1, seq: -1}

// keyedBatch builds a batch of recs with timestamp ts.
func keyedBatch(t testing.TB, recs []kv, ts int64, pr prodInfo, codec record.Codec) record.Batch {
	t.Helper()
	bld, err := record.NewBuilder(&record.BuilderOptions{Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = pr.pid, pr.epoch, pr.seq
	for _, r := range recs {
		rec := record.Record{Key: []byte(r.key), Value: r.value, Timestamp: ts}
		if len(r.key)%3 == 0 {
			rec.Headers = []record.Header{{Key: "h", Value: []byte(r.key)}}
		}
		if err := bld.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rrec is a record read back, with its header and null-ness.
type rrec struct {
	offset int64
	key    string
	value  string
	null   bool
	hdr    string // value of header "h", "" if none
}

func (r rrec) String() string {
	if r.null {
		return fmt.Sprintf("%d:%s=<nil>", r.offset, r.key)
	}
	return fmt.Sprintf("%d:%s=%q", r.offset, r.key, r.value)
}

// rbatch is a batch read back.
type rbatch struct {
	base, last int64
	prod       prodInfo
	codec      record.Codec
	recs       []rrec
}

// readBatches reads every visible batch from the log start, checking that
// offsets ascend strictly across batches and records.
func readBatches(t testing.TB, l *Log) []rbatch {
	t.Helper()
	var out []rbatch
	off := l.LogStartOffset()
	prev := int64(-1)
	for off < l.HighWatermark() {
		v, err := l.Read(off, 1<<20)
		if errors.Is(err, ErrNoData) {
			break
		}
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		bs, err := decodeBatches(v)
		v.Release()
		if err != nil {
			t.Fatalf("decode at %d: %v", off, err)
		}
		for _, b := range bs {
			if b.last < off {
				continue
			}
			if b.base <= prev {
				t.Fatalf("batch at %d does not follow offset %d", b.base, prev)
			}
			for _, r := range b.recs {
				if r.offset <= prev || r.offset > b.last {
					t.Fatalf("record offset %d out of order (previous %d, batch [%d, %d])", r.offset, prev, b.base, b.last)
				}
				prev = r.offset
			}
			prev = b.last
			out = append(out, b)
			off = b.last + 1
		}
	}
	return out
}

func decodeBatches(v *readpath.View) (out []rbatch, err error) {
	err = readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		buf = bytes.Clone(buf)
		for len(buf) > 0 {
			b, rest, err := record.Parse(buf)
			if err != nil {
				return err
			}
			rb := rbatch{base: b.BaseOffset(), last: b.LastOffset(), codec: b.Codec(),
				prod: prodInfo{pid: b.ProducerID(), epoch: b.ProducerEpoch(), seq: b.BaseSequence()}}
			it := b.Records(nil)
			for it.Next() {
				r := it.Record()
				h, _ := r.HeaderValue("h")
				rb.recs = append(rb.recs, rrec{offset: r.Offset(), key: string(r.Key()), value: string(r.Value()), null: r.ValueIsNull(), hdr: string(h)})
			}
			err = it.Err()
			it.Close()
			if err != nil {
				return err
			}
			out = append(out, rb)
			buf = rest
		}
		return nil
	})
	return out, err
}

func recordsOf(bs []rbatch) []rrec {
	var out []rrec
	for _, b := range bs {
		out = append(out, b.recs...)
	}
	return out
}

// kvModel is what a compaction test wrote: every record by offset and every
// batch by base offset.
type kvModel struct {
	recs    map[int64]rrec
	batches map[int64]rbatch
	order   []int64 // batch bases in append order
}

func newKVModel() *kvModel {
	return &kvModel{recs: map[int64]rrec{}, batches: map[int64]rbatch{}}
}

// appendKV appends one batch and records it.
func (m *kvModel) appendKV(t testing.TB, l *Log, recs []kv, ts int64, pr prodInfo, codec record.Codec) {
	t.Helper()
	b := keyedBatch(t, recs, ts, pr, codec)
	first, last, err := l.Append(b)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	rb := rbatch{base: first, last: last, prod: pr, codec: codec}
	for i, r := range recs {
		rr := rrec{offset: first + int64(i), key: r.key, value: string(r.value), null: r.value == nil}
		if len(r.key)%3 == 0 {
			rr.hdr = r.key
		}
		m.recs[rr.offset] = rr
		rb.recs = append(rb.recs, rr)
	}
	m.batches[first] = rb
	m.order = append(m.order, first)
}

// latestBelow returns, per key, the offset of its latest record below end.
func (m *kvModel) latestBelow(end int64) map[string]int64 {
	out := map[string]int64{}
	for o, r := range m.recs {
		if cur, ok := out[r.key]; o < end && (!ok || o > cur) {
			out[r.key] = o
		}
	}
	return out
}

// checkCompacted checks a compacted log against the model: every record
// read is the one written at its offset; below cleanEnd no record has a
// later one of its key below cleanEnd, and no tombstone is left if
// tombstonesGone; every key's latest record is there unless it is a
// tombstone allowed to go; producer batches keep their fields; every
// producer's last data batch is there.
func (m *kvModel) checkCompacted(t testing.TB, l *Log, cleanEnd int64, tombstonesGone bool) []rbatch {
	t.Helper()
	bs := readBatches(t, l)
	got := map[int64]rrec{}
	for _, b := range bs {
		orig, ok := m.batches[b.base]
		if !ok {
			t.Fatalf("batch at %d: no batch was written at that offset", b.base)
		}
		if b.last != orig.last || b.prod != orig.prod {
			t.Fatalf("batch at %d: last %d producer %+v, written with last %d producer %+v", b.base, b.last, b.prod, orig.last, orig.prod)
		}
		for _, r := range b.recs {
			want, ok := m.recs[r.offset]
			if !ok || r != want {
				t.Fatalf("record %v, written as %v", r, want)
			}
			got[r.offset] = r
		}
	}
	latestClean := m.latestBelow(cleanEnd)
	for o, r := range got {
		if o < cleanEnd && latestClean[r.key] != o {
			t.Fatalf("record %v below the cleaned end %d is superseded by offset %d", r, cleanEnd, latestClean[r.key])
		}
		if o < cleanEnd && tombstonesGone && r.null {
			t.Fatalf("tombstone %v survived its retention", r)
		}
	}
	for key, o := range m.latestBelow(1 << 62) {
		if _, ok := got[o]; !ok && !(m.recs[o].null && tombstonesGone && o < cleanEnd) {
			t.Fatalf("latest record of key %s (offset %d) is gone", key, o)
		}
	}
	lastOf := map[int64]int64{}
	for _, base := range m.order {
		if pr := m.batches[base].prod; pr.pid >= 0 {
			lastOf[pr.pid] = base
		}
	}
	for pid, base := range lastOf {
		if !slices.ContainsFunc(bs, func(b rbatch) bool { return b.base == base }) {
			t.Fatalf("producer %d's last batch (at %d) is gone", pid, base)
		}
	}
	return bs
}

// compactOpts are options for a compaction test: small segments, the log's
// own goroutine off, and a cleaner whose workers are not started.
func compactOpts(t testing.TB, segBytes int64, copts *CleanerOptions) *Options {
	t.Helper()
	c, err := newCleaner(copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &Options{
		SegmentBytes: segBytes,
		Compact:      true,
		Cleaner:      c,
		Now:          func() time.Time { return time.UnixMilli(1_700_000_000_000) },
		noBackground: true,
	}
}

// randomKV returns n records over keys k0..k{keys-1}, a tombstone with
// probability tomb, values tagged with tag.
func randomKV(rng *rand.Rand, n, keys int, tomb float64, tag string) []kv {
	out := make([]kv, n)
	for i := range out {
		k := fmt.Sprintf("k%d", rng.IntN(keys))
		out[i] = kv{key: k}
		if rng.Float64() >= tomb {
			out[i].value = []byte(fmt.Sprintf("%s-%s-%d", tag, k, rng.IntN(1_000_000)))
		}
	}
	return out
}

var testCodecs = []record.Codec{record.CodecNone, record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

// leftovers lists the files of dir with a transient suffix.
func leftovers(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) || strings.HasSuffix(n, segment.DeletedSuffix) ||
			strings.HasPrefix(n, SwapCommitFile) {
			out = append(out, n)
		}
	}
	return out
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dst, e.Name()), fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
}

// segmentBases lists the bases of the log's segments.
func segmentBases(l *Log) []int64 {
	var out []int64
	l.snap.Load().segs.Ascend(func(e *segEntry) bool {
		out = append(out, e.base)
		return true
	})
	return out
}
