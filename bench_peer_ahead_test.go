package folio

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// BenchmarkPeerSequentialAhead asks what W3 would gain from a consumer
// that reads ahead on a goroutine of its own, as franz-go's fetch
// goroutines check and decode batches before PollFetches hands them out:
// the reading (the batch CRC over bytes not yet in cache, the varints,
// building each Record) would run beside the application's handling of
// the previous records instead of before it. It is a model, not a
// feature: "ahead" is a goroutine doing what a ZeroCopy Poll does (one
// read of MaxPollRecords' worth of bytes, record.Parse checking each
// batch's CRC, the records decoded into Records whose values alias the
// mapping) into one of two slices that go back and forth with the
// handling goroutine. "inline" is peerbench's folio adapter (ZeroCopy
// Poll, then the records handled on the same goroutine), "pread" the raw
// adapter's floor. Every record is handled as peerbench handles it: each
// of its bytes compared with what it must hold (peerCheck). ns/op is wall
// clock per record, the figure to compare on a machine with an idle core;
// cpu-ns/op adds both goroutines.
func BenchmarkPeerSequentialAhead(b *testing.B) {
	br := peerLog(b)
	b.Run("inline", func(b *testing.B) {
		c := consumerT(b, br, &ConsumerOptions{ZeroCopy: true})
		if err := c.Assign(Assignment{Topic: "peer"}); err != nil {
			b.Fatal(err)
		}
		peerAheadRun(b, func(ctx context.Context) ([]Record, error) { return c.Poll(ctx) }, c)
	})
	b.Run("ahead", func(b *testing.B) {
		// The reading goroutine: what Poll does for a ZeroCopy consumer
		// (a read bounded by MaxPollRecords' worth of bytes, each batch's
		// CRC checked by record.Parse, each record decoded into a Record
		// whose value aliases the mapping), into one of two slices that
		// go back and forth with the handling goroutine. A slice's views
		// are released when it comes back.
		p, err := br.Partition("peer", 0)
		if err != nil {
			b.Fatal(err)
		}
		type polled struct {
			recs  []Record
			views []*readpath.View
			err   error
		}
		full, empty := make(chan *polled, 1), make(chan *polled, 2)
		slots := []*polled{{}, {}}
		for _, pl := range slots {
			pl.recs = make([]Record, 0, DefaultMaxPollRecords)
			empty <- pl
		}
		quit := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			opts := &record.DecodeOptions{SkipCRC: true}
			next := int64(0)
			for {
				var pl *polled
				select {
				case pl = <-empty:
				case <-quit:
					return
				}
				for _, v := range pl.views {
					v.Release()
				}
				pl.recs, pl.views = pl.recs[:0], pl.views[:0]
				if next == int64(peerRecs()) {
					next = 0
				}
				v, err := p.Read(next, DefaultMaxPollRecords*(peerSize+8), log.BoundHighWatermark)
				if err == nil {
					pl.views = append(pl.views, v)
					err = readpath.Guard(func() error {
						data, err := v.Bytes()
						for err == nil && len(data) > 0 && len(pl.recs) < DefaultMaxPollRecords {
							var bt record.Batch
							if bt, data, err = record.Parse(data); err != nil {
								break
							}
							it := bt.Records(opts)
							it.SkipBefore(next)
							for len(pl.recs) < DefaultMaxPollRecords && it.Next() {
								r := it.Record()
								pl.recs = append(pl.recs, Record{Topic: "peer", Offset: r.Offset(), Value: r.Value(), Timestamp: time.UnixMilli(r.Timestamp())})
								next = r.Offset() + 1
							}
							err = it.Err()
							it.Close()
						}
						return err
					})
				}
				pl.err = err
				select {
				case full <- pl:
				case <-quit:
					return
				}
			}
		}()
		defer func() {
			close(quit)
			<-done
			// Wherever each slot was when the goroutine stopped, its views
			// go back now (Release is idempotent).
			for _, pl := range slots {
				for _, v := range pl.views {
					v.Release()
				}
			}
		}()
		var last *polled
		peerAheadRun(b, func(context.Context) ([]Record, error) {
			if last != nil {
				empty <- last
			}
			last = <-full
			return last.recs, last.err
		}, nil)
	})
	b.Run("pread", func(b *testing.B) {
		f, idx := peerRawFile(b)
		end := idx[peerRecs()]
		rd := bufio.NewReaderSize(nil, 1<<20)
		b.SetBytes(peerSize)
		b.ResetTimer()
		u := startUsage()
		next := int64(peerRecs())
		for range b.N {
			if next == int64(peerRecs()) {
				next = 0
				rd.Reset(io.NewSectionReader(f, 0, end))
			}
			hdr, err := rd.Peek(4)
			if err != nil {
				b.Fatal(err)
			}
			n := 4 + int(binary.BigEndian.Uint32(hdr))
			r, err := rd.Peek(n)
			if err != nil {
				b.Fatal(err)
			}
			if !peerCheck(r[4:], next) {
				b.Fatalf("record %d: wrong bytes", next)
			}
			if _, err := rd.Discard(n); err != nil {
				b.Fatal(err)
			}
			next++
		}
		b.StopTimer()
		u.report(b, b.N)
	})
}

// peerAheadRun handles b.N records from poll, checking each as peerbench
// does; seek, when not nil, is the consumer to send back to the start
// when the log is read to its end.
func peerAheadRun(b *testing.B, poll func(context.Context) ([]Record, error), seek *Consumer) {
	ctx := context.Background()
	b.SetBytes(peerSize)
	b.ResetTimer()
	u := startUsage()
	next := int64(0)
	for n := 0; n < b.N; {
		if next == int64(peerRecs()) {
			next = 0
			if seek != nil {
				if err := seek.Seek("peer", 0, AtOffset(0)); err != nil {
					b.Fatal(err)
				}
			}
		}
		recs, err := poll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := range recs {
			if recs[i].Offset != next || !peerCheck(recs[i].Value, next) {
				b.Fatalf("record at %d: wrong bytes", recs[i].Offset)
			}
			next++
		}
		n += len(recs)
	}
	b.StopTimer()
	u.report(b, b.N)
}

// peerCheck compares every byte of a record's value with what it must
// hold (its offset in bytes 0-7, zeros after), one byte at a time as
// peerbench's checkRecord does.
func peerCheck(v []byte, off int64) bool {
	if len(v) != peerSize || binary.LittleEndian.Uint64(v) != uint64(off) {
		return false
	}
	var acc byte
	for _, c := range v[8:] {
		acc |= c
	}
	return acc == 0
}
