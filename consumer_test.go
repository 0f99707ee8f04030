package folio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// produceTimed produces n records to partition 0 of topicName, record i
// with timestamp base + i seconds, each in its own batch.
func produceTimed(t *testing.T, p *Producer, topicName string, base time.Time, n int) {
	t.Helper()
	for i := range n {
		if _, _, err := p.Produce(context.Background(), &Record{Topic: topicName, Value: value("t", i), Timestamp: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConsumerStartPositions(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, nil)
	base := time.UnixMilli(1_700_000_000_000)
	produceTimed(t, p, "t", base, 10)

	cases := []struct {
		start Offset
		first int64 // -1: nothing until a new record
	}{
		{AtEarliest(), 0},
		{Offset{}, 0},
		{AtOffset(5), 5},
		{AtTime(base.Add(3 * time.Second)), 3},
		{AtTime(base.Add(3*time.Second + time.Millisecond)), 4},
		{AtTime(base.Add(-time.Hour)), 0},
		{AtTime(base.Add(time.Hour)), -1},
		{AtLatest(), -1},
	}
	for _, tc := range cases {
		t.Run(tc.start.String(), func(t *testing.T) {
			c := consumerT(t, b, nil)
			if err := c.Assign(Assignment{Topic: "t", Start: tc.start}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			recs, err := c.Poll(ctx)
			if tc.first < 0 {
				if !errors.Is(err, context.DeadlineExceeded) || len(recs) != 0 {
					t.Fatalf("Poll: %d records, %v; want to wait", len(recs), err)
				}
				if pos, _ := c.Position("t", 0); pos != 10 {
					t.Fatalf("position %d, want 10", pos)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if recs[0].Offset != tc.first || !bytes.Equal(recs[0].Value, value("t", int(tc.first))) || len(recs) != int(10-tc.first) {
				t.Fatalf("first record %d (%q), %d records; want offset %d and %d records", recs[0].Offset, recs[0].Value, len(recs), tc.first, 10-tc.first)
			}
			if !recs[0].Timestamp.Equal(base.Add(time.Duration(tc.first) * time.Second)) {
				t.Fatalf("timestamp %v", recs[0].Timestamp)
			}
		})
	}
}

func TestConsumerRecordFields(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	createTopicT(t, b, "lat", TopicConfig{Flush: FlushNone, TimestampType: topic.LogAppendTime})
	p := producerT(t, b, nil)
	in := []*Record{
		{Topic: "t", Key: nil, Value: []byte("no key")},
		{Topic: "t", Key: []byte{}, Value: []byte{}},
		{Topic: "t", Key: []byte("tomb"), Value: nil},
		{Topic: "t", Key: []byte("h"), Value: []byte("v"), Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "a", Value: nil}, {Key: "b", Value: []byte{}}}},
	}
	for _, r := range in {
		if _, _, err := p.Produce(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t"})
	out := pollN(t, c, len(in))
	for i, r := range out {
		w := in[i]
		if r.Topic != "t" || r.Partition != 0 || r.Offset != int64(i) ||
			(r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Key, w.Key) ||
			(r.Value == nil) != (w.Value == nil) || !bytes.Equal(r.Value, w.Value) || len(r.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %+v, want %+v", i, r, w)
		}
		for j, h := range r.Headers {
			if h.Key != w.Headers[j].Key || (h.Value == nil) != (w.Headers[j].Value == nil) || !bytes.Equal(h.Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d: %+v, want %+v", i, j, h, w.Headers[j])
			}
		}
	}
	// Under LogAppendTime the log's clock replaces the producer's.
	before := time.Now().Add(-time.Second)
	if _, _, err := p.Produce(context.Background(), &Record{Topic: "lat", Value: []byte("x"), Timestamp: time.UnixMilli(42)}); err != nil {
		t.Fatal(err)
	}
	lc := consumerT(t, b, nil)
	_ = lc.Assign(Assignment{Topic: "lat"})
	if r := pollN(t, lc, 1)[0]; r.Timestamp.Before(before) {
		t.Fatalf("log-append-time record has timestamp %v", r.Timestamp)
	}
}

func TestConsumerSeekPositionLag(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 2, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	for i := range 20 {
		if _, _, err := p.Produce(context.Background(), &Record{Topic: "t", Partition: int32(i % 2), Value: value("s", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c := consumerT(t, b, &ConsumerOptions{Name: "c1", MaxPollRecords: 4})
	if err := c.Assign(Assignment{Topic: "t", Partition: 0}, Assignment{Topic: "t", Partition: 1, Start: AtOffset(8)}); err != nil {
		t.Fatal(err)
	}
	if got := c.Assignment(); len(got) != 2 || got[0] != (TopicPartition{Topic: "t", Partition: 0}) || got[1] != (TopicPartition{Topic: "t", Partition: 1}) {
		t.Fatalf("Assignment: %v", got)
	}
	if lag, _ := c.Lag("t", 0); lag != 10 {
		t.Fatalf("lag %d, want 10", lag)
	}
	recs := pollN(t, c, 4)
	pos0, _ := c.Position("t", 0)
	pos1, _ := c.Position("t", 1)
	if pos0+pos1-8 != 4 {
		t.Fatalf("positions %d and %d after 4 records", pos0, pos1)
	}
	st := b.Stats()
	for _, ps := range st.Partitions {
		want := map[int32]int64{0: pos0, 1: pos1}[ps.Partition]
		if len(ps.Consumers) != 1 || ps.Consumers[0].Consumer != "c1" || ps.Consumers[0].Position != want || ps.Consumers[0].Lag != 10-want {
			t.Fatalf("Stats partition %d consumers %+v, want c1 at %d", ps.Partition, ps.Consumers, want)
		}
	}
	if err := c.Seek("t", 1, AtEarliest()); err != nil {
		t.Fatal(err)
	}
	if pos, _ := c.Position("t", 1); pos != 0 {
		t.Fatalf("position after Seek %d", pos)
	}
	if err := c.Seek("t", 1, AtLatest()); err != nil {
		t.Fatal(err)
	}
	if lag, _ := c.Lag("t", 1); lag != 0 {
		t.Fatalf("lag at latest %d", lag)
	}
	if err := c.Unassign(TopicPartition{Topic: "t", Partition: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Position("t", 1); !errors.Is(err, ErrNotAssigned) {
		t.Fatalf("Position of an unassigned partition: %v", err)
	}
	if err := c.Seek("t", 1, AtEarliest()); !errors.Is(err, ErrNotAssigned) {
		t.Fatalf("Seek of an unassigned partition: %v", err)
	}
	if err := c.Assign(Assignment{Topic: "t", Partition: 9}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("Assign of a missing partition: %v", err)
	}
	if err := c.Assign(Assignment{Topic: "x"}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Assign of a missing topic: %v", err)
	}
	_ = recs
}

func TestConsumerOutOfRange(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "r", 10)
	if err := b.DeleteRecordsBefore("t", 0, 6); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteRecordsBefore("t", 0, 11); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("DeleteRecordsBefore beyond the end: %v", err)
	}

	none := consumerT(t, b, &ConsumerOptions{Reset: ResetNone})
	_ = none.Assign(Assignment{Topic: "t", Start: AtOffset(2)})
	_, err := none.Poll(context.Background())
	var oor *OffsetOutOfRangeError
	if !errors.As(err, &oor) || !errors.Is(err, ErrOffsetOutOfRange) || oor.Start != 6 || oor.End != 10 || oor.Offset != 2 {
		t.Fatalf("Poll below the start with ResetNone: %v", err)
	}
	// The caller fixes the position and goes on.
	_ = none.Seek("t", 0, AtEarliest())
	if recs := pollN(t, none, 4); recs[0].Offset != 6 {
		t.Fatalf("after Seek: %d", recs[0].Offset)
	}

	early := consumerT(t, b, &ConsumerOptions{Reset: ResetEarliest})
	_ = early.Assign(Assignment{Topic: "t", Start: AtOffset(1)})
	if recs := pollN(t, early, 4); recs[0].Offset != 6 || !bytes.Equal(recs[0].Value, value("r", 6)) {
		t.Fatalf("ResetEarliest read %d", recs[0].Offset)
	}

	late := consumerT(t, b, &ConsumerOptions{Reset: ResetLatest})
	_ = late.Assign(Assignment{Topic: "t", Start: AtOffset(50)}) // beyond the end
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := late.Poll(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ResetLatest Poll: %v", err)
	}
	produceN(t, p, "t", "n", 1)
	if recs := pollN(t, late, 1); recs[0].Offset != 10 {
		t.Fatalf("ResetLatest read %d, want the new record 10", recs[0].Offset)
	}
}

func TestConsumerSkipsControlBatchesAndGaps(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	l, err := partLog(b, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	build := func(control bool, deltas ...int32) record.Batch {
		bld, _ := record.NewBuilder(nil)
		bld.Control = control
		for _, d := range deltas {
			_ = bld.AppendAt(d, record.Record{Key: []byte("k"), Value: []byte(fmt.Sprint("d", d))})
		}
		bt, _ := bld.Build(nil)
		return bt
	}
	// Offsets: 0 data, 1-2 control, 3..8 a batch with records at 3, 5, 8
	// (a compacted batch), 9 control, 10 data.
	for _, bt := range []record.Batch{build(false, 0), build(true, 0, 1), build(false, 0, 2, 5), build(true, 0), build(false, 0)} {
		if _, _, err := l.Append(bt); err != nil {
			t.Fatal(err)
		}
	}
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t"})
	recs := pollN(t, c, 5)
	var offs []int64
	for _, r := range recs {
		offs = append(offs, r.Offset)
	}
	if fmt.Sprint(offs) != "[0 3 5 8 10]" {
		t.Fatalf("offsets %v, want [0 3 5 8 10]", offs)
	}
	if pos, _ := c.Position("t", 0); pos != 11 {
		t.Fatalf("position %d, want 11", pos)
	}
	// Starting inside a control batch or a gap finds the next record.
	for start, want := range map[int64]int64{1: 3, 4: 5, 6: 8, 9: 10} {
		c2 := consumerT(t, b, nil)
		_ = c2.Assign(Assignment{Topic: "t", Start: AtOffset(start)})
		recs, err := c2.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if r := recs[0]; r.Offset != want {
			t.Fatalf("from %d: first record %d, want %d", start, r.Offset, want)
		}
	}
	// A partition ending in a control batch: Poll waits, position past it.
	if _, _, err := l.Append(build(true, 0)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Poll(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll over a trailing control batch: %v", err)
	}
	if pos, _ := c.Position("t", 0); pos != 12 {
		t.Fatalf("position %d, want 12 (past the control batch)", pos)
	}
}

func TestConsumerWaits(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 3, Flush: FlushNone})
	createTopicT(t, b, "u", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	c := consumerT(t, b, nil)
	for part := range int32(3) {
		_ = c.Assign(Assignment{Topic: "t", Partition: part})
	}
	// A record in any one of the partitions wakes the Poll.
	type polled struct {
		recs []Record
		err  error
	}
	poll := func() <-chan polled {
		ch := make(chan polled, 1)
		go func() {
			recs, err := c.Poll(context.Background())
			ch <- polled{recs, err}
		}()
		return ch
	}
	for _, part := range []int32{2, 0, 1} {
		ch := poll()
		waitParked(t, b, "t", part, 1) // the Poll waits on every partition
		if _, _, err := p.Produce(context.Background(), &Record{Topic: "t", Partition: part, Value: []byte{byte(part)}}); err != nil {
			t.Fatal(err)
		}
		r := <-ch
		if r.err != nil || len(r.recs) != 1 || r.recs[0].Partition != part {
			t.Fatalf("woke with %+v, %v; want a record of partition %d", r.recs, r.err, part)
		}
	}
	// An assignment change wakes a waiting Poll too.
	if _, _, err := p.Produce(context.Background(), &Record{Topic: "u", Value: []byte("u")}); err != nil {
		t.Fatal(err)
	}
	ch := poll()
	waitParked(t, b, "t", 0, 1)
	_ = c.Assign(Assignment{Topic: "u"})
	if r := <-ch; r.err != nil || len(r.recs) != 1 || r.recs[0].Topic != "u" {
		t.Fatalf("woke with %+v, %v; want u's record", r.recs, r.err)
	}
	// Close wakes it with ErrClosed.
	done := make(chan error, 1)
	go func() {
		_, err := c.Poll(context.Background())
		done <- err
	}()
	waitParked(t, b, "u", 0, 1)
	_ = c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Poll during Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestConsumerRecordsIterator(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "it", 30)
	c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 7})
	_ = c.Assign(Assignment{Topic: "t"})
	next := int64(0)
	for _, stopAt := range []int{10, 3, 17} {
		n := 0
		for r, err := range c.Records(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			if r.Offset != next || !bytes.Equal(r.Value, value("it", int(next))) {
				t.Fatalf("record %d, want %d", r.Offset, next)
			}
			next++
			if n++; n == stopAt {
				break
			}
		}
		if pos, _ := c.Position("t", 0); pos != next {
			t.Fatalf("after breaking at %d: position %d, want %d", stopAt, pos, next)
		}
	}
	// The iterator ends with ctx's error.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var last error
	for _, err := range c.Records(ctx) {
		last = err
	}
	if !errors.Is(last, context.DeadlineExceeded) {
		t.Fatalf("iterator ended with %v", last)
	}
}

func TestConsumerCopiesAndZeroCopy(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "plain", TopicConfig{Flush: FlushNone})
	createTopicT(t, b, "zstd", TopicConfig{Flush: FlushNone, Compression: topic.CompressionZstd})
	createTopicT(t, b, "send", TopicConfig{Flush: FlushNone, ReadPath: ReadSendfile})
	p := producerT(t, b, nil)
	names := []string{"plain", "zstd", "send"}
	for _, name := range names {
		for i := range 50 {
			p.ProduceAsync(context.Background(), &Record{Topic: name, Key: []byte("k"), Value: value(name, i), Headers: []Header{{Key: "h", Value: value("h", i)}}}, nil)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		kept := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 10})
		view := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 10, ZeroCopy: true})
		_ = kept.Assign(Assignment{Topic: name})
		_ = view.Assign(Assignment{Topic: name})
		var all []Record
		for len(all) < 50 {
			ks := pollN(t, kept, 10)
			vs := pollN(t, view, 10)
			for i := range ks {
				if !bytes.Equal(ks[i].Value, vs[i].Value) || !bytes.Equal(ks[i].Headers[0].Value, vs[i].Headers[0].Value) {
					t.Fatalf("%s: copy %q and view %q differ", name, ks[i].Value, vs[i].Value)
				}
			}
			if len(view.held.views)+len(view.curs) == 0 {
				// Its own, or the batch it stopped inside (curBatch).
				t.Fatalf("%s: a zero-copy poll holds no view", name)
			}
			all = append(all, ks...)
		}
		_ = view.Close()
		if len(view.held.views)+len(view.held.iters)+len(view.curs) != 0 {
			t.Fatalf("%s: Close kept %d views", name, len(view.held.views))
		}
		if err := b.DeleteRecordsBefore(name, 0, 50); err != nil {
			t.Fatal(err)
		}
		// Copies stay the caller's after everything is released.
		for i, r := range all {
			if !bytes.Equal(r.Value, value(name, i)) || !bytes.Equal(r.Headers[0].Value, value("h", i)) {
				t.Fatalf("%s: kept record %d now %q", name, i, r.Value)
			}
		}
	}
}

func TestConsumerRoundRobin(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 2, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	for i := range 100 {
		p.ProduceAsync(context.Background(), &Record{Topic: "t", Partition: int32(i % 2), Value: value("rr", i)}, nil)
	}
	_ = p.Flush(context.Background())
	c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 10})
	_ = c.Assign(Assignment{Topic: "t", Partition: 0}, Assignment{Topic: "t", Partition: 1})
	seen := map[int32]int{}
	for range 4 {
		recs := pollN(t, c, 10)
		seen[recs[0].Partition]++
	}
	if seen[0] != 2 || seen[1] != 2 {
		t.Fatalf("polls led by partition: %v; want both in turn", seen)
	}
}

func TestConsumerDeletedTopic(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "d", 3)
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t"})
	pollN(t, c, 3)
	done := make(chan error, 1)
	go func() {
		_, err := c.Poll(context.Background())
		done <- err
	}()
	waitParked(t, b, "t", 0, 1)
	if err := b.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Poll of a deleted topic: %v", err)
	}
	if _, _, err := p.Produce(context.Background(), &Record{Topic: "t", Value: []byte("x")}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Produce to a deleted topic: %v", err)
	}
}

// TestConsumerPollAllocatesForWhatItReturns: a consumer that keeps up gets
// a record or two per Poll, and each Poll must allocate for those, not for
// MaxPollRecords; at tens of thousands of polls a second, 64 KiB apiece
// kept the garbage collector running without pause and made the tail
// latency. A count of bytes, not a timing.
func TestConsumerPollAllocatesForWhatItReturns(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, nil)
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t"})
	const polls = 50
	var allocated uint64
	var before, after runtime.MemStats
	for i := range polls {
		if _, _, err := p.Produce(context.Background(), &Record{Topic: "t", Value: value("a", i)}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&before)
		recs, err := c.Poll(context.Background())
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Offset != int64(i) || !bytes.Equal(recs[0].Value, value("a", i)) {
			t.Fatalf("poll %d: %d records, want record %d alone", i, len(recs), i)
		}
		allocated += after.TotalAlloc - before.TotalAlloc
	}
	perPoll := allocated / polls
	limit := uint64(unsafe.Sizeof(Record{})) * DefaultMaxPollRecords / 8
	t.Logf("a one-record Poll allocates %d bytes", perPoll)
	if perPoll > limit {
		t.Fatalf("a one-record Poll allocates %d bytes; room for MaxPollRecords/8 records is %d", perPoll, limit)
	}
}

// TestZeroCopyPollReusesItsSlice: a ZeroCopy Poll hands its records out
// in the slice the Poll before it returned (valid only until the next
// Poll, as the records are), so that a scan allocates nothing per record:
// a fresh slice of up to MaxPollRecords records per Poll was most of a
// sequential read's CPU, in the garbage collector and its write barriers.
func TestZeroCopyPollReusesItsSlice(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, nil)
	const n, perPoll = 2000, 100
	ctx := context.Background()
	for i := range n {
		p.ProduceAsync(ctx, &Record{Topic: "t", Value: value("a", i)}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := consumerT(t, b, &ConsumerOptions{ZeroCopy: true, MaxPollRecords: perPoll})
	_ = c.Assign(Assignment{Topic: "t"})
	var first *Record
	var allocated uint64
	var before, after runtime.MemStats
	for next := 0; next < n; {
		runtime.ReadMemStats(&before)
		recs, err := c.Poll(ctx)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			t.Fatalf("no records at %d", next)
		}
		if first == nil {
			first = &recs[0]
		} else {
			if &recs[0] != first {
				t.Fatalf("the Poll at %d returned a new slice", next)
			}
			allocated += after.TotalAlloc - before.TotalAlloc
		}
		for _, r := range recs {
			if r.Offset != int64(next) || !bytes.Equal(r.Value, value("a", next)) {
				t.Fatalf("record %d: offset %d value %q", next, r.Offset, r.Value)
			}
			next++
		}
	}
	polls := uint64(n/perPoll - 1)
	limit := uint64(unsafe.Sizeof(Record{})) * perPoll / 8
	t.Logf("a %d-record ZeroCopy Poll allocates %d bytes", perPoll, allocated/polls)
	if allocated/polls > limit {
		t.Fatalf("a %d-record ZeroCopy Poll allocates %d bytes; room for an eighth of its records is %d", perPoll, allocated/polls, limit)
	}
}

// TestConsumerPassesOverDamage: a sealed segment with a broken batch
// header early in it (not scanned by a clean open; the sparse index knows
// batches after it), or cut short inside a batch (it cannot load; the
// first read repairs it as recovery would), is a reported hole, not a dead
// end:
// the consumer delivers every record before it, reports the damaged range
// once (matching ErrCorrupt, naming the file, with the offsets), leaves
// its position there for that Poll, and then goes on at the next valid
// batch to the records after it, in this segment and the next.
func TestConsumerPassesOverDamage(t *testing.T) {
	for _, how := range []string{"broken header", "truncated", "crc", "last offset delta", "length inside", "length outside"} {
		t.Run(how, func(t *testing.T) { consumerPassesOverDamage(t, how) })
	}
}

func consumerPassesOverDamage(t *testing.T, how string) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	createTopicT(t, b, "d", TopicConfig{Flush: FlushNone, SegmentBytes: 48 << 10, Partitions: 1})
	p := producerT(t, b, nil)
	const n = 1500
	produceN(t, p, "d", "r", n)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, topic.DirName("d", 0))
	ents, err := os.ReadDir(pdir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			logs = append(logs, filepath.Join(pdir, e.Name()))
		}
	}
	if len(logs) < 3 {
		t.Fatalf("%d segments", len(logs))
	}
	victim := logs[1]
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	// The third batch: its offsets, and the next one's base, where
	// reading must resume (a truncated segment resumes at the next).
	pos := 0
	for range 2 {
		pos += int(binary.BigEndian.Uint32(data[pos+8:])) + 12
	}
	size := int(binary.BigEndian.Uint32(data[pos+8:])) + 12
	from := int64(binary.BigEndian.Uint64(data[pos:]))
	resume := int64(binary.BigEndian.Uint64(data[pos+size:]))
	switch how {
	case "truncated":
		data = data[:pos+30]
		name := filepath.Base(logs[2])
		resume, _ = strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
	case "broken header":
		data[pos+16] = 9 // magic
	case "crc":
		data[pos+size-1] ^= 0x20 // the last record's last byte
	case "last offset delta":
		// The field the reverted pass-over trusted: 0x50 in its top byte
		// sent the consumer to offset 1342177361.
		data[pos+23] ^= 0x50
	case "length inside":
		data[pos+10] ^= 0x01 // 256 bytes off: into a later batch or garbage
	case "length outside":
		data[pos+8] ^= 0x10 // past the end of the file
	}
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}

	b = openT(t, dir, nil)
	c := consumerT(t, b, nil)
	if err := c.Assign(Assignment{Topic: "d", Start: AtEarliest()}); err != nil {
		t.Fatal(err)
	}
	got := map[int64][]byte{}
	var damage []*log.DamagedRangeError
	for polls := 0; len(got)+int(rangeLen(damage)) < n && polls < 1000; polls++ {
		recs, err := c.Poll(context.Background())
		if err != nil {
			var d *log.DamagedRangeError
			if !errors.As(err, &d) || !errors.Is(err, ErrCorrupt) || !IsCorrupt(err) || !strings.Contains(err.Error(), victim) {
				t.Fatalf("Poll: %v", err)
			}
			if pos, _ := c.Position("d", 0); pos != d.From {
				t.Fatalf("position %d after the damage was reported at %d", pos, d.From)
			}
			damage = append(damage, d)
			continue
		}
		for _, r := range recs {
			got[r.Offset] = r.Value
		}
	}
	if len(damage) != 1 || damage[0].Pos != int64(pos) || damage[0].Path != victim {
		t.Fatalf("damage reported %d times: %v, want once at byte %d of %s", len(damage), damage, pos, victim)
	}
	if damage[0].From != from || damage[0].Resume != resume {
		t.Fatalf("damage reported as offsets %d to %d, want exactly the batch's %d to %d", damage[0].From, damage[0].Resume-1, from, resume-1)
	}
	t.Logf("%v", damage[0])
	d := damage[0]
	for i := int64(0); i < n; i++ {
		v, ok := got[i]
		if inside := i >= d.From && i < d.Resume; inside == ok || (ok && !bytes.Equal(v, value("r", int(i)))) {
			t.Fatalf("offset %d: read %v %q; the damaged range is %d to %d", i, ok, v, d.From, d.Resume-1)
		}
	}
}

func rangeLen(ds []*log.DamagedRangeError) int64 {
	var n int64
	for _, d := range ds {
		n += d.Resume - d.From
	}
	return n
}

// TestPollFullAcrossBoundedReads checks that a Poll, which reads about what
// MaxPollRecords takes at the partition's last bytes per record, reads on
// when records grow larger than that estimate: every Poll still returns
// MaxPollRecords records while that many are there (all in one segment),
// in order, intact.
func TestPollFullAcrossBoundedReads(t *testing.T) {
	for _, zc := range []bool{false, true} {
		t.Run(fmt.Sprintf("ZeroCopy=%v", zc), func(t *testing.T) {
			b := openT(t, t.TempDir(), &Options{CheckpointInterval: -1, RetentionCheckInterval: -1})
			createTopicT(t, b, "grow", TopicConfig{Partitions: 1, Flush: FlushNone})
			p := producerT(t, b, nil)
			ctx := context.Background()
			const small, large, batch, maxPoll = 300, 300, 10, 100
			val := func(i int) []byte {
				v := value("grow", i)
				if i >= small {
					v = append(v, bytes.Repeat([]byte{byte(i)}, 2048)...)
				}
				return v
			}
			for i := 0; i < small+large; i++ {
				p.ProduceAsync(ctx, &Record{Topic: "grow", Value: val(i)}, nil)
				if (i+1)%batch == 0 {
					if err := p.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: maxPoll, ZeroCopy: zc})
			if err := c.Assign(Assignment{Topic: "grow"}); err != nil {
				t.Fatal(err)
			}
			next := 0
			for next < small+large {
				recs, err := c.Poll(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if want := min(maxPoll, small+large-next); len(recs) != want {
					t.Fatalf("Poll at offset %d returned %d records, want %d", next, len(recs), want)
				}
				for _, r := range recs {
					if r.Offset != int64(next) || !bytes.Equal(r.Value, val(next)) {
						t.Fatalf("record at offset %d: offset %d, value %.20q", next, r.Offset, r.Value)
					}
					next++
				}
			}
		})
	}
}
