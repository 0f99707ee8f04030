package folio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs/faultfs"
)

// rawBatches returns copies of every batch a partition holds.
func rawBatches(t testing.TB, b *Broker, topicName string, partition int32) []record.Batch {
	t.Helper()
	l, err := partLog(b, topicName, partition)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Batch
	for pos := l.LogStartOffset(); pos < l.HighWatermark(); {
		v, err := l.Read(pos, 1<<20)
		if err != nil {
			t.Fatalf("read %s-%d at %d: %v", topicName, partition, pos, err)
		}
		err = readpath.Guard(func() error {
			buf, err := v.Bytes()
			if err != nil {
				return err
			}
			for len(buf) > 0 {
				bt, rest, err := record.Parse(buf)
				if err != nil {
					return err
				}
				buf = rest
				if bt.LastOffset() >= pos {
					out = append(out, bt.Clone())
					pos = bt.LastOffset() + 1
				}
			}
			return nil
		})
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestProduceSyncAndAsync(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 3, Flush: FlushNone})
	p := producerT(t, b, nil)
	got := produceN(t, p, "t", "sync", 30)
	next := map[int64]int64{}
	for i, po := range got {
		if po[1] != next[po[0]] {
			t.Fatalf("record %d at %d/%d, want offset %d", i, po[0], po[1], next[po[0]])
		}
		next[po[0]]++
	}

	const n = 5000
	var (
		mu    sync.Mutex // guards calls and last
		calls = make([]int, n)
		last  = map[int32]int64{}
		bad   error
	)
	for i := range n {
		rec := &Record{Topic: "t", Value: value("async", i)}
		p.ProduceAsync(context.Background(), rec, func(r *Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			calls[i]++
			if err != nil {
				bad = err
				return
			}
			if r != rec || r.Offset < 0 {
				bad = fmt.Errorf("callback for record %d got %+v", i, r)
			}
			if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
				bad = fmt.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
			}
			last[r.Partition] = r.Offset
		})
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if bad != nil {
		t.Fatal(bad)
	}
	for i, c := range calls {
		if c != 1 {
			t.Fatalf("record %d: callback called %d times", i, c)
		}
	}
	// Every record is in the log once, with its value.
	c := consumerT(t, b, nil)
	for part := range int32(3) {
		if err := c.Assign(Assignment{Topic: "t", Partition: part}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, r := range pollN(t, c, n+30) {
		if seen[string(r.Value)] {
			t.Fatalf("value %q twice", r.Value)
		}
		seen[string(r.Value)] = true
	}
}

func TestPartitioners(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 7, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{BatchBytes: 1024})
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	for i := range 300 {
		key := make([]byte, rng.IntN(20))
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		want, _ := topic.KeyPartition(key, 7)
		part, _, err := p.Produce(context.Background(), &Record{Topic: "t", Key: key, Value: []byte("v")})
		if err != nil || part != want {
			t.Fatalf("key %d %x: partition %d (%v), Kafka's murmur2 says %d", i, key, part, err, want)
		}
	}
	// Unkeyed records stick to a partition for about BatchBytes, then move.
	var parts []int32
	for range 200 {
		part, _, err := p.Produce(context.Background(), &Record{Topic: "t", Value: bytes.Repeat([]byte("u"), 90)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, part)
	}
	runs, distinct := 1, map[int32]bool{parts[0]: true}
	for i := 1; i < len(parts); i++ {
		if parts[i] != parts[i-1] {
			runs++
		}
		distinct[parts[i]] = true
	}
	// 200 records of ~100 bytes in 1 KiB stretches: about 20 runs, never
	// one per record.
	if runs < 5 || runs > 60 || len(distinct) < 2 {
		t.Fatalf("unkeyed records made %d runs over %d partitions: %v", runs, len(distinct), parts)
	}

	m := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	for part := range int32(7) {
		got, _, err := m.Produce(context.Background(), &Record{Topic: "t", Partition: part, Key: []byte("same"), Value: []byte("m")})
		if err != nil || got != part {
			t.Fatalf("manual partition %d: went to %d, %v", part, got, err)
		}
	}
	if _, _, err := m.Produce(context.Background(), &Record{Topic: "t", Partition: 7, Value: []byte("m")}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("partition 7 of 7: %v, want ErrUnknownPartition", err)
	}
	if _, _, err := m.Produce(context.Background(), &Record{Topic: "nope", Value: []byte("m")}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
}

// blockLogSyncs makes fs hold every fsync of a .log file until release is
// closed; blocked is signalled when the first one arrives.
func blockLogSyncs(fs *faultfs.FS) (blocked <-chan struct{}, release func()) {
	gate := make(chan struct{})
	first := make(chan struct{})
	var once sync.Once
	fs.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync && strings.HasSuffix(op.Path, ".log") {
			once.Do(func() { close(first) })
			<-gate
		}
		return nil
	})
	var rel sync.Once
	return first, func() { rel.Do(func() { close(gate) }) }
}

func TestProduceUnknownOutcome(t *testing.T) {
	fs := faultfs.New()
	b := openT(t, t.TempDir(), faultOpts(fs))
	createTopicT(t, b, "t", TopicConfig{Flush: FlushSync})
	p := producerT(t, b, nil)
	blocked, release := blockLogSyncs(fs)
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := p.Produce(ctx, &Record{Topic: "t", Value: []byte("maybe")})
		errc <- err
	}()
	<-blocked // the record is written and waits for its fsync
	cancel()
	err := <-errc
	if !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Produce with a cancelled ctx during the fsync: %v, want ErrUnknownOutcome and context.Canceled", err)
	}
	release()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// "May still be written": here it was.
	c := consumerT(t, b, nil)
	if err := c.Assign(Assignment{Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	if recs := pollN(t, c, 1); string(recs[0].Value) != "maybe" {
		t.Fatalf("read %q", recs[0].Value)
	}

	// A ctx that has ended before the call is a plain ctx error: nothing
	// was produced.
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, _, err := p.Produce(done, &Record{Topic: "t", Value: []byte("no")}); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("Produce with an ended ctx: %v, want context.Canceled only", err)
	}
	if l, _ := partLog(b, "t", 0); l.LogEndOffset() != 1 {
		t.Fatalf("log end %d: the record of the ended ctx was written", l.LogEndOffset())
	}
}

func TestProduceBlocksOnMemoryCap(t *testing.T) {
	fs := faultfs.New()
	b := openT(t, t.TempDir(), faultOpts(fs))
	createTopicT(t, b, "t", TopicConfig{Flush: FlushSync})
	const limit = 4096
	p := producerT(t, b, &ProducerOptions{MaxBufferedBytes: limit})
	blocked, release := blockLogSyncs(fs)
	defer release()

	var acked atomic.Int64
	cb := func(_ *Record, err error) {
		if err == nil {
			acked.Add(1)
		}
	}
	val := bytes.Repeat([]byte("m"), 100)
	per := memSize(&Record{Value: val})
	fit := int(limit / per)
	for range fit {
		p.ProduceAsync(context.Background(), &Record{Topic: "t", Value: val}, cb)
	}
	<-blocked
	if used := p.mem.used.Load(); used > limit {
		t.Fatalf("buffered %d bytes, cap %d", used, limit)
	}
	// The next record finds no room: it blocks until its ctx ends, and is
	// then not produced at all.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var blockedErr error
	doneCh := make(chan struct{})
	p.ProduceAsync(ctx, &Record{Topic: "t", Value: val}, func(_ *Record, err error) {
		blockedErr = err
		close(doneCh)
	})
	<-doneCh
	if !errors.Is(blockedErr, context.DeadlineExceeded) || errors.Is(blockedErr, ErrUnknownOutcome) {
		t.Fatalf("produce past the cap: %v, want DeadlineExceeded (and not unknown outcome)", blockedErr)
	}
	if st := b.Stats(); st.ProduceBlocked == 0 {
		t.Fatal("Stats.ProduceBlocked is 0 after a produce blocked")
	}
	// A produce blocked on memory resumes when appends free it.
	resumed := make(chan error, 1)
	go func() {
		_, _, err := p.Produce(context.Background(), &Record{Topic: "t", Value: val})
		resumed <- err
	}()
	// It waits at the memory gate (its waiter count proves it) until
	// memory is freed.
	for deadline := time.Now().Add(30 * time.Second); p.mem.waiters.Load() == 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the produce past the cap never waited for memory")
		}
	}
	select {
	case err := <-resumed:
		t.Fatalf("produce past the cap returned %v before memory was freed", err)
	default:
	}
	release()
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if acked.Load() != int64(fit) {
		t.Fatalf("%d of %d buffered records acknowledged", acked.Load(), fit)
	}
	l, _ := partLog(b, "t", 0)
	if end := l.LogEndOffset(); end != int64(fit)+1 {
		t.Fatalf("log end %d, want %d (the timed-out record must not be written)", end, fit+1)
	}
}

func TestMessageTooLarge(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone, MaxMessageBytes: 1024})
	p := producerT(t, b, nil)
	huge := &Record{Topic: "t", Value: make([]byte, 1000)}
	if _, _, err := p.Produce(context.Background(), huge); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("sync: %v, want ErrMessageTooLarge", err)
	}
	var asyncErr error
	p.ProduceAsync(context.Background(), huge, func(_ *Record, err error) { asyncErr = err })
	if !errors.Is(asyncErr, ErrMessageTooLarge) {
		t.Fatalf("async: %v, want ErrMessageTooLarge", asyncErr)
	}
	l, _ := partLog(b, "t", 0)
	if l.LogEndOffset() != 0 {
		t.Fatalf("a refused record was written: log end %d", l.LogEndOffset())
	}
	// The largest record that fits on its own goes through.
	fits := &Record{Topic: "t"}
	for fits.Value = make([]byte, 900); aloneBatchSize(fits) < 1024; fits.Value = append(fits.Value, 'x') {
	}
	fits.Value = fits.Value[:len(fits.Value)-1]
	if _, _, err := p.Produce(context.Background(), fits); err != nil {
		t.Fatalf("record of exactly the limit: %v", err)
	}
	// Many records are batched, each batch within the limit.
	for i := range 50 {
		p.ProduceAsync(context.Background(), &Record{Topic: "t", Value: bytes.Repeat([]byte{byte(i)}, 300)}, nil)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, bt := range rawBatches(t, b, "t", 0) {
		if len(bt) > 1024 {
			t.Fatalf("batch of %d bytes in a topic of max 1024", len(bt))
		}
		n += int(bt.NumRecords())
	}
	if n != 51 {
		t.Fatalf("%d records stored, want 51", n)
	}
	// AppendBatch applies the limit as a Kafka broker does: the partition
	// package's TestAppendBatchLimits.
}

func TestCompression(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "gz", TopicConfig{Flush: FlushNone, Compression: topic.CompressionGzip})
	createTopicT(t, b, "prod", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{Compression: record.CodecLZ4})
	for _, name := range []string{"gz", "prod"} {
		for i := range 20 {
			p.ProduceAsync(context.Background(), &Record{Topic: name, Key: []byte("k"), Value: value(name, i),
				Headers: []Header{{Key: "h", Value: []byte("hv")}}}, nil)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]record.Codec{"gz": record.CodecGzip, "prod": record.CodecLZ4} {
		for _, bt := range rawBatches(t, b, name, 0) {
			if bt.Codec() != want {
				t.Fatalf("topic %s: batch codec %v, want %v", name, bt.Codec(), want)
			}
		}
		c := consumerT(t, b, nil)
		_ = c.Assign(Assignment{Topic: name})
		for i, r := range pollN(t, c, 20) {
			if !bytes.Equal(r.Value, value(name, i)) || len(r.Headers) != 1 || string(r.Headers[0].Value) != "hv" {
				t.Fatalf("topic %s record %d: %+v", name, i, r)
			}
		}
	}
	// A batch from outside in another codec is recompressed to the
	// topic's: the partition package's TestAppendBatchRecompresses.
}

// idemBatch builds a batch of n records from producer pid at seq.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = pid, epoch, seq
	for i := range n {
		if err := bld.Append(record.Record{Value: []byte(fmt.Sprintf("p%d-e%d-s%d", pid, epoch, int(seq)+i)), Timestamp: time.Now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	bt, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return bt
}

// TestProducerStateRebuiltOnRestart: after a clean shutdown (snapshot) and
// after a crash (replay of the log), a retried batch still gets its
// original offsets and a gap is still refused.
func TestProducerStateRebuiltOnRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			fs := faultfs.New()
			dir := t.TempDir()
			b, err := Open(dir, faultOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			createTopicT(t, b, "t", TopicConfig{Flush: FlushSync})
			var last AppendResult
			for i := range 4 {
				if last, err = b.AppendBatch(context.Background(), "t", 0, idemBatch(t, 9, 2, int32(i*2), 2)); err != nil {
					t.Fatal(err)
				}
			}
			if clean {
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				kill(t, b, fs)
				if err := fs.PowerCut(); err != nil {
					t.Fatal(err)
				}
			}
			b = openT(t, dir, faultOpts(fs))
			res, err := b.AppendBatch(context.Background(), "t", 0, idemBatch(t, 9, 2, 6, 2))
			if err != nil || !res.Duplicate || res.BaseOffset != last.BaseOffset || res.LastOffset != last.LastOffset {
				t.Fatalf("retry after restart: %+v, %v; want duplicate of %+v", res, err, last)
			}
			if _, err := b.AppendBatch(context.Background(), "t", 0, idemBatch(t, 9, 2, 9, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("gap after restart: %v", err)
			}
			if res, err := b.AppendBatch(context.Background(), "t", 0, idemBatch(t, 9, 2, 8, 1)); err != nil || res.BaseOffset != 8 {
				t.Fatalf("next batch after restart: %+v, %v", res, err)
			}
			// A second restart replays the batch after the snapshot too.
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b = openT(t, dir, faultOpts(fs))
			if res, err := b.AppendBatch(context.Background(), "t", 0, idemBatch(t, 9, 2, 8, 1)); err != nil || !res.Duplicate || res.BaseOffset != 8 {
				t.Fatalf("retry after the second restart: %+v, %v", res, err)
			}
			if st := b.Stats(); st.Partitions[0].Producers != 1 {
				t.Fatalf("Stats: %d producers", st.Partitions[0].Producers)
			}
		})
	}
}

func TestProducerBatchesAreIdempotent(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 2, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{BatchBytes: 512})
	q := producerT(t, b, &ProducerOptions{DisableIdempotence: true})
	pid, epoch := p.ProducerID()
	if pid < 0 || epoch != 0 {
		t.Fatalf("producer id %d epoch %d", pid, epoch)
	}
	if qid, _ := q.ProducerID(); qid != -1 {
		t.Fatalf("non-idempotent producer has id %d", qid)
	}
	if p2 := producerT(t, b, nil); func() bool { id, _ := p2.ProducerID(); return id == pid }() {
		t.Fatal("two producers share an id")
	}
	for i := range 400 {
		p.ProduceAsync(context.Background(), &Record{Topic: "t", Key: []byte(fmt.Sprint(i)), Value: value("i", i)}, nil)
		if i%4 == 0 {
			q.ProduceAsync(context.Background(), &Record{Topic: "t", Key: []byte(fmt.Sprint(i)), Value: value("q", i)}, nil)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := q.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for part := range int32(2) {
		next := int32(0)
		batches := 0
		for _, bt := range rawBatches(t, b, "t", part) {
			if bt.ProducerID() == -1 {
				continue
			}
			if bt.ProducerID() != pid || bt.ProducerEpoch() != epoch || bt.BaseSequence() != next {
				t.Fatalf("partition %d batch at %d: producer %d/%d sequence %d, want %d/%d sequence %d",
					part, bt.BaseOffset(), bt.ProducerID(), bt.ProducerEpoch(), bt.BaseSequence(), pid, epoch, next)
			}
			next += bt.LastOffsetDelta() + 1
			batches++
		}
		if batches < 2 {
			t.Fatalf("partition %d: %d batches; BatchBytes 512 should have cut several", part, batches)
		}
	}
}

func TestNextSequenceWraps(t *testing.T) {
	cases := []struct{ seq, n, want int32 }{
		{0, 1, 1},
		{10, 5, 15},
		{math.MaxInt32 - 1, 1, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 2, 5, 2},
	}
	for _, c := range cases {
		if got := nextSequence(c.seq, c.n); got != c.want {
			t.Errorf("nextSequence(%d, %d) = %d, want %d", c.seq, c.n, got, c.want)
		}
	}
}

func TestLingerAndClose(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p, err := b.NewProducer(&ProducerOptions{Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64
	for i := range 10 {
		p.ProduceAsync(context.Background(), &Record{Topic: "t", Value: value("l", i)}, func(_ *Record, err error) {
			if err == nil {
				acked.Add(1)
			}
		})
	}
	l, _ := partLog(b, "t", 0)
	if l.LogEndOffset() != 0 || acked.Load() != 0 {
		t.Fatalf("lingering records appended early: end %d, %d acked", l.LogEndOffset(), acked.Load())
	}
	// Close appends what lingers, in one batch, and reports every outcome.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if acked.Load() != 10 || l.LogEndOffset() != 10 {
		t.Fatalf("after Close: %d acked, log end %d", acked.Load(), l.LogEndOffset())
	}
	if bs := rawBatches(t, b, "t", 0); len(bs) != 1 {
		t.Fatalf("%d batches, want the 10 lingering records in 1", len(bs))
	}
	if err := p.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := p.Produce(context.Background(), &Record{Topic: "t"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Produce after Close: %v", err)
	}
	// A short linger sends on its own.
	q := producerT(t, b, &ProducerOptions{Linger: 5 * time.Millisecond})
	if _, off, err := q.Produce(context.Background(), &Record{Topic: "t", Value: []byte("x")}); err != nil || off != 10 {
		t.Fatalf("lingered produce: %d, %v", off, err)
	}
}

// TestCompressionExpansionSplits: random bytes grow under compression, so a
// batch that fits the topic's limit uncompressed can exceed it compressed.
// The producer splits such a batch and rebuilds the halves; a single record
// that exceeds the limit once compressed fails alone with
// ErrMessageTooLarge, and nothing else is lost.
func TestCompressionExpansionSplits(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone, MaxMessageBytes: 1024, Compression: topic.CompressionSnappy})
	p := producerT(t, b, &ProducerOptions{Linger: time.Hour}) // fill whole batches
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	random := func(n int) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		return v
	}
	var (
		mu      sync.Mutex // guards results
		results = map[int]error{}
	)
	vals := map[int][]byte{}
	for i := range 40 {
		vals[i] = random(180)
		p.ProduceAsync(context.Background(), &Record{Topic: "t", Value: vals[i]}, func(_ *Record, err error) {
			mu.Lock()
			results[i] = err
			mu.Unlock()
		})
	}
	// One record that fits uncompressed on its own but not compressed.
	lone := &Record{Topic: "t"}
	for lone.Value = random(900); aloneBatchSize(lone) < 1024; lone.Value = append(lone.Value, byte(rng.Uint32())) {
	}
	lone.Value = lone.Value[:len(lone.Value)-1]
	var loneErr error
	p.ProduceAsync(context.Background(), lone, func(_ *Record, err error) {
		mu.Lock()
		loneErr = err
		mu.Unlock()
	})
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, err := range results {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if !errors.Is(loneErr, ErrMessageTooLarge) {
		t.Fatalf("a record too large once compressed: %v", loneErr)
	}
	n := 0
	for _, bt := range rawBatches(t, b, "t", 0) {
		if len(bt) > 1024 || bt.Codec() != record.CodecSnappy {
			t.Fatalf("batch of %d bytes, codec %v", len(bt), bt.Codec())
		}
		n += int(bt.NumRecords())
	}
	if n != 40 {
		t.Fatalf("%d records stored, want 40", n)
	}
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t"})
	for i, r := range pollN(t, c, 40) {
		if !bytes.Equal(r.Value, vals[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestProduceTimestampPerBatch checks how a record produced without a
// Timestamp is stamped: with the broker clock's time when its batch was
// opened, read once per batch, while a record's own Timestamp is kept.
func TestProduceTimestampPerBatch(t *testing.T) {
	clock := newTestClock(time.UnixMilli(1_700_000_000_000))
	b := openT(t, t.TempDir(), &Options{Now: clock.Now, CheckpointInterval: -1, RetentionCheckInterval: -1})
	createTopicT(t, b, "ts", TopicConfig{Partitions: 1})
	// A long linger keeps the first batch open across the clock's move.
	p := producerT(t, b, &ProducerOptions{Linger: time.Hour, DisableIdempotence: true})
	ctx := context.Background()
	opened := clock.Now()
	own := time.UnixMilli(1_600_000_000_000)
	cb := func(_ *Record, err error) {
		if err != nil {
			t.Error(err)
		}
	}
	p.ProduceAsync(ctx, &Record{Topic: "ts", Value: []byte("a")}, cb)
	clock.Advance(5 * time.Millisecond)
	p.ProduceAsync(ctx, &Record{Topic: "ts", Value: []byte("b")}, cb)
	p.ProduceAsync(ctx, &Record{Topic: "ts", Value: []byte("c"), Timestamp: own}, cb)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(7 * time.Millisecond)
	next := clock.Now()
	p.ProduceAsync(ctx, &Record{Topic: "ts", Value: []byte("d")}, cb)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := consumerT(t, b, nil)
	if err := c.Assign(Assignment{Topic: "ts"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{"a": opened, "b": opened, "c": own, "d": next}
	for _, r := range pollN(t, c, 4) {
		if w := want[string(r.Value)]; !r.Timestamp.Equal(w) {
			t.Errorf("record %q: timestamp %v, want %v", r.Value, r.Timestamp, w)
		}
	}
}
