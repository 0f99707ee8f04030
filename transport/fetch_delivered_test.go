package transport

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFetchCountsDelivered: a Kafka client's fetches count in the
// partition's Delivered counters (Stats' RecordsOut): exactly the records
// from the fetch offset on, the first batch's earlier records left out,
// on both read paths, and the sendfile path still sends without a copy.
func TestFetchCountsDelivered(t *testing.T) {
	ts := startServer(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, path := range []string{"sendfile", "mmap"} {
		name := "out-" + path
		var cfg topic.Config
		if err := cfg.Set("read.path", path); err != nil {
			t.Fatal(err)
		}
		cfg.Partitions = 1
		ts.b.mustCreate(t, name, cfg)
		cl := newClient(t, ts.addr, kgo.DefaultProduceTopic(name), kgo.ProducerBatchCompression(kgo.NoCompression()))
		const total, from = 40, 5
		for batch := range 4 { // 4 batches of 10: offset 5 lies inside the first
			for i := range 10 {
				cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d-%d", batch, i)}, nil)
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		p, err := ts.b.Partition(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := p.Out(); n != 0 {
			t.Fatalf("%s: %d records out before any fetch", path, n)
		}
		before := readpath.ReadCounters()
		cons := newClient(t, ts.addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{name: {0: kgo.NewOffset().At(from)}}))
		for n := 0; n < total-from; {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			n += fs.NumRecords()
		}
		cons.Close()
		after := readpath.ReadCounters()
		if recs, bytes := p.Out(); recs != total-from || bytes <= 0 {
			t.Fatalf("%s: a client fetched %d records from offset %d; counted %d records, %d bytes", path, total-from, from, recs, bytes)
		}
		if path == "sendfile" && runtime.GOOS == "linux" && after.CopiedBytes != before.CopiedBytes {
			t.Fatalf("sendfile topic: counting copied %d bytes", after.CopiedBytes-before.CopiedBytes)
		}
		cl.Close()
	}
}

// bytesHeaders is a batchHeaders over a byte slice.
type bytesHeaders []byte

func (b bytesHeaders) Len() int { return len(b) }
func (b bytesHeaders) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, fmt.Errorf("past the end")
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, fmt.Errorf("short")
	}
	return n, nil
}

// walkHeaders is the oracle of the count: it walks v's batch headers (a
// read of each), as the segment's framing walk does, and returns their
// Framing and the records at or after from counted batch by batch. A
// header that cannot be read or does not parse ends the walk, as it ends
// a segment read's view. ok is false when no header parses.
func walkHeaders(v batchHeaders, from int64) (fr readpath.Framing, n int, ok bool) {
	var hdr [record.HeaderSize]byte
	for pos := int64(0); pos < int64(v.Len()); {
		if _, err := v.ReadAt(hdr[:], pos); err != nil {
			break
		}
		size, err := record.CheckHeader(hdr[:])
		if err != nil {
			break
		}
		b := record.Batch(hdr[:])
		if ok && b.BaseOffset() <= fr.LastOffset {
			// Offsets that do not ascend end a segment's view (see
			// segment.read): so does the walk.
			break
		}
		if !ok {
			fr = readpath.Framing{FirstBase: b.BaseOffset(), FirstLast: b.LastOffset(), FirstRecords: b.NumRecords()}
			ok = true
		}
		fr.Records += int64(b.NumRecords())
		fr.LastOffset = b.LastOffset()
		switch {
		case b.LastOffset() < from:
		case b.BaseOffset() >= from:
			n += int(b.NumRecords())
		default:
			n += int(min(b.LastOffset()-from+1, int64(b.NumRecords())))
		}
		pos += int64(size)
	}
	return fr, n, ok
}

// FuzzDeliveredRecords: the count from a Framing is the count of a walk
// over the same headers, batch by batch, for any fetch offset at or below
// the first batch's last (a read starts at the batch holding the fetch
// offset), or below it where the first batch has fewer records than
// offsets and decodes; damaged or cut bytes end the walk and never
// panic, and no count exceeds the records the readable headers declare.
func FuzzDeliveredRecords(f *testing.F) {
	f.Add([]byte{}, int64(0))
	f.Add(make([]byte, 100), int64(3))
	bld, err := record.NewBuilder(nil)
	if err != nil {
		f.Fatal(err)
	}
	var two []byte
	for i := range 2 {
		bld.Reset()
		for j := range 3 {
			if err := bld.Append(record.Record{Value: fmt.Appendf(nil, "v%d", j), Timestamp: 1}); err != nil {
				f.Fatal(err)
			}
		}
		b, err := bld.Build(nil)
		if err != nil {
			f.Fatal(err)
		}
		record.Batch(b).SetBaseOffset(int64(3 * i))
		two = append(two, b...)
	}
	for _, c := range []struct {
		b    []byte
		from int64
		want int
	}{
		{two, 0, 6}, {two, 1, 5}, {two, 2, 4}, {two[:len(two)-1], 1, 5}, {two[:record.HeaderSize+10], 0, 3}, {two[:10], 0, 0},
	} {
		fr, walked, _ := walkHeaders(bytesHeaders(c.b), c.from)
		if n := deliveredRecords(bytesHeaders(c.b), fr, c.from); n != c.want || walked != c.want {
			f.Fatalf("%d bytes from %d: %d records (walk %d), want %d", len(c.b), c.from, n, walked, c.want)
		}
		f.Add(c.b, c.from)
	}
	f.Fuzz(func(t *testing.T, b []byte, from int64) {
		fr, walked, ok := walkHeaders(bytesHeaders(b), from)
		n := deliveredRecords(bytesHeaders(b), fr, from)
		if !ok {
			if n != 0 {
				t.Fatalf("no header, count %d", n)
			}
			return
		}
		if n < 0 || int64(n) > max(fr.Records, 0) {
			t.Fatalf("count %d, the headers declare %d records", n, fr.Records)
		}
		// Batches after the first start past its last offset in a log;
		// fuzzed headers need not, and then only the walk (which looks
		// at each) can tell.
		// A first batch with fewer records than offsets may be decoded
		// and then count fewer than the walk's bound.
		thinned := int64(fr.FirstRecords) != fr.FirstLast-fr.FirstBase+1
		if from <= fr.FirstLast && ordered(b) && (n > walked || (n != walked && !thinned)) {
			t.Fatalf("from %d: framing counts %d, the walk %d", from, n, walked)
		}
	})
}

// ordered reports whether each readable batch of b starts past the last
// offset of the one before, as batches of a log do.
func ordered(b []byte) bool {
	last := int64(math.MinInt64)
	for rest := b; len(rest) >= record.HeaderSize; {
		size, err := record.CheckHeader(rest)
		if err != nil {
			break
		}
		h := record.Batch(rest)
		if h.BaseOffset() <= last || h.NumRecords() < 0 || int64(h.NumRecords()) > h.LastOffset()-h.BaseOffset()+1 {
			return false
		}
		last = h.LastOffset()
		if size > len(rest) {
			break
		}
		rest = rest[size:]
	}
	return true
}
