package folio

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// Benchmarks shaped like peerbench's workloads (github.com/foliolog's
// side-by-side harness), so that a profile of the public API's hot paths
// needs no harness: BenchmarkPeerAppend is W1 (100-byte records in batches
// of 100, one ProduceAsync per record and a Flush per batch),
// BenchmarkPeerPointRead is W4 (one record at a random offset: Seek + Poll
// with MaxPollRecords 1 and FetchBytes 1) and BenchmarkPeerSequential is W3
// (Seek to the start, Poll until b.N records). Each record's bytes 0-7
// hold its offset and are checked. Besides ns/op (wall clock, which a
// busy machine inflates) they report cpu-ns/op, the process's CPU time per
// operation, and for reads minflt/op, minor page faults per operation.

const (
	peerBatch = 100
	peerSize  = 100
)

// peerRecs is the size of the log the read benchmarks read: peerbench's W1
// writes 1,000,000 records.
var peerRecsFlag = flag.Int("peer.recs", 200_000, "records in the log of the BenchmarkPeer read benchmarks")

func peerRecs() int { return *peerRecsFlag }

// peerLog fills a one-partition FlushNone topic with peerRecs records the
// way W1 does and returns the broker.
func peerLog(b *testing.B) *Broker {
	b.Helper()
	br := openT(b, b.TempDir(), &Options{CheckpointInterval: -1})
	createTopicT(b, br, "peer", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(b, br, nil)
	peerAppend(b, p, 0, peerRecs())
	return br
}

// peerAppend produces records [from, to) in batches of peerBatch, a Flush
// after each, as peerbench's folio adapter does.
func peerAppend(b *testing.B, p *Producer, from, to int) {
	peerAppendEvery(b, p, from, to, peerBatch)
}

// peerAppendEvery is peerAppend with a Flush every `every` records.
func peerAppendEvery(b *testing.B, p *Producer, from, to, every int) {
	ctx := context.Background()
	recs := make([]Record, every)
	vals := make([][]byte, every)
	for i := range vals {
		vals[i] = make([]byte, peerSize)
	}
	var failed failures
	cb := failed.callback
	for n := from; n < to; n += every {
		k := min(every, to-n)
		for i := range k {
			binary.LittleEndian.PutUint64(vals[i], uint64(n+i))
			recs[i] = Record{Topic: "peer", Value: vals[i]}
			p.ProduceAsync(ctx, &recs[i], cb)
		}
		if err := p.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if err := failed.get(); err != nil {
			b.Fatal(err)
		}
	}
}

// usage measures CPU time and page faults over a benchmark's loop.
type usage struct {
	cpu    time.Duration
	minflt int64
}

func startUsage() usage {
	cpu, flt, _ := processUsage()
	return usage{cpu, flt}
}

func (u usage) report(b *testing.B, ops int) {
	cpu, flt, ok := processUsage()
	if !ok || ops == 0 {
		return
	}
	b.ReportMetric(float64(cpu-u.cpu)/float64(ops), "cpu-ns/op")
	b.ReportMetric(float64(flt-u.minflt)/float64(ops), "minflt/op")
}

// countBatches returns how many RecordBatches the .log files under dir
// hold.
func countBatches(b *testing.B, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for len(data) > 0 {
			_, rest, err := record.Parse(data)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			data = rest
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func BenchmarkPeerAppend(b *testing.B) {
	dir := b.TempDir()
	br, n := benchPeerAppend(b, dir, nil)
	if err := br.Sync("peer", 0); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(countBatches(b, dir))/float64((peerBatch+n)/peerBatch), "appends/batch")
}

// benchPeerAppend is W1 through the public API on a broker in dir over fs
// (nil: the OS): b.N records (at least a batch) after a first batch that
// makes the producer id and the first segment, with records/s and the
// CPU per record reported. It returns the broker and the records timed;
// the timer is stopped.
func benchPeerAppend(b *testing.B, dir string, fs vfs.FS) (*Broker, int) {
	br := openT(b, dir, &Options{CheckpointInterval: -1, FS: fs})
	createTopicT(b, br, "peer", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(b, br, nil)
	peerAppend(b, p, 0, peerBatch) // the producer id and the first segment
	n := max(b.N/peerBatch*peerBatch, peerBatch)
	b.SetBytes(peerSize)
	b.ReportAllocs()
	b.ResetTimer()
	start, u := time.Now(), startUsage()
	peerAppend(b, p, peerBatch, peerBatch+n)
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "records/s")
	u.report(b, n)
	b.StopTimer()
	return br, n
}

func BenchmarkPeerPointRead(b *testing.B) {
	br := peerLog(b)
	c := consumerT(b, br, &ConsumerOptions{ZeroCopy: true, MaxPollRecords: 1, FetchBytes: 1})
	if err := c.Assign(Assignment{Topic: "peer"}); err != nil {
		b.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	b.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	u := startUsage()
	defer func() { u.report(b, b.N) }()
	for range b.N {
		off := rnd.Int64N(int64(peerRecs()))
		if err := c.Seek("peer", 0, AtOffset(off)); err != nil {
			b.Fatal(err)
		}
		recs, err := c.Poll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Offset != off || binary.LittleEndian.Uint64(recs[0].Value) != uint64(off) {
			b.Fatalf("read at %d: got %d records", off, len(recs))
		}
	}
}

func BenchmarkPeerSequential(b *testing.B) {
	benchSequential(b, peerLog(b))
}

// BenchmarkSequentialLargeBatches is BenchmarkPeerSequential over batches
// of about 9,500 records (a producer's 1 MiB BatchBytes, flushed every
// 10,000 records), each many times a Poll's MaxPollRecords (500): what a
// consumer's kept batch (curBatch) spares is reading and checking the
// batch again at every Poll.
func BenchmarkSequentialLargeBatches(b *testing.B) {
	br := openT(b, b.TempDir(), &Options{CheckpointInterval: -1})
	createTopicT(b, br, "peer", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(b, br, &ProducerOptions{BatchBytes: 1 << 20, Linger: time.Hour})
	peerAppendEvery(b, p, 0, peerRecs(), 10_000)
	benchSequential(b, br)
}

// benchSequential reads the topic "peer" of br, filled by peerAppend, from
// start to end and over again, checking every record.
func benchSequential(b *testing.B, br *Broker) {
	c := consumerT(b, br, &ConsumerOptions{ZeroCopy: true})
	if err := c.Assign(Assignment{Topic: "peer"}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(peerSize)
	b.ReportAllocs()
	b.ResetTimer()
	u := startUsage()
	defer func() { u.report(b, b.N) }()
	next := int64(0)
	for n := 0; n < b.N; {
		if next == int64(peerRecs()) {
			next = 0
			if err := c.Seek("peer", 0, AtOffset(0)); err != nil {
				b.Fatal(err)
			}
		}
		recs, err := c.Poll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := range recs {
			if recs[i].Offset != next || binary.LittleEndian.Uint64(recs[i].Value) != uint64(next) {
				b.Fatalf("record at %d holds %d", recs[i].Offset, binary.LittleEndian.Uint64(recs[i].Value))
			}
			next++
		}
		n += len(recs)
	}
}

// peerRawFile writes peerRecs records the way peerbench's raw adapter
// does: a plain file, each record behind a 4-byte length, with the offset
// index kept in memory (idx[n] is record n's position, idx[peerRecs()]
// the file's end).
func peerRawFile(b *testing.B) (*os.File, []int64) {
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	idx := make([]int64, peerRecs()+1)
	buf := make([]byte, 0, peerBatch*(4+peerSize))
	val := make([]byte, peerSize)
	var pos int64
	for n := 0; n < peerRecs(); n++ {
		binary.LittleEndian.PutUint64(val, uint64(n))
		buf = binary.BigEndian.AppendUint32(buf, peerSize)
		buf = append(buf, val...)
		idx[n], pos = pos, pos+4+peerSize
		if len(buf) == cap(buf) || n == peerRecs()-1 {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			buf = buf[:0]
		}
	}
	idx[peerRecs()] = pos
	return f, idx
}

// BenchmarkPeerPointReadPread is the floor BenchmarkPeerPointRead is held
// to, peerbench's raw adapter: the same records in a plain file behind a
// 4-byte length each, an offset index in memory, one pread per read.
func BenchmarkPeerPointReadPread(b *testing.B) {
	f, idx := peerRawFile(b)
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	rbuf := make([]byte, 4+peerSize)
	b.ReportAllocs()
	b.ResetTimer()
	u := startUsage()
	defer func() { u.report(b, b.N) }()
	for range b.N {
		off := rnd.Int64N(int64(peerRecs()))
		r := rbuf[:idx[off+1]-idx[off]]
		if _, err := f.ReadAt(r, idx[off]); err != nil {
			b.Fatal(err)
		}
		if binary.LittleEndian.Uint64(r[4:]) != uint64(off) {
			b.Fatalf("read at %d: wrong record", off)
		}
	}
}

// BenchmarkPeerSequentialPread is the floor BenchmarkPeerSequential and
// BenchmarkPeerSequentialLog are held to, peerbench's raw adapter reading
// W3: the same records in a plain file behind a 4-byte length each, read
// through 1 MiB buffered preads and handed out from the buffer without a
// copy, with no checksum. The same check of bytes 0-7.
func BenchmarkPeerSequentialPread(b *testing.B) {
	f, idx := peerRawFile(b)
	end := idx[peerRecs()]
	br := bufio.NewReaderSize(nil, 1<<20)
	b.SetBytes(peerSize)
	b.ReportAllocs()
	b.ResetTimer()
	u := startUsage()
	defer func() { u.report(b, b.N) }()
	next := int64(peerRecs())
	for range b.N {
		if next == int64(peerRecs()) {
			next = 0
			br.Reset(io.NewSectionReader(f, 0, end))
		}
		hdr, err := br.Peek(4)
		if err != nil {
			b.Fatal(err)
		}
		n := 4 + int(binary.BigEndian.Uint32(hdr))
		r, err := br.Peek(n)
		if err != nil {
			b.Fatal(err)
		}
		if binary.LittleEndian.Uint64(r[4:]) != uint64(next) {
			b.Fatalf("record %d: wrong record", next)
		}
		if _, err := br.Discard(n); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

// BenchmarkPeerAppendLog is BenchmarkPeerAppend one layer down, as
// peerbench's folio-log adapter does it: each batch of peerBatch records
// encoded by a record.Builder (one timestamp per batch) and written by one
// log.Append, FlushNone. The broker layers' cost is the ratio of the two.
func BenchmarkPeerAppendLog(b *testing.B) { benchPeerAppendLog(b, nil) }

// benchPeerAppendLog is BenchmarkPeerAppendLog on the file system fsys
// (nil: the operating system's).
func benchPeerAppendLog(b *testing.B, fsys vfs.FS) {
	l, err := log.Open(fsys, b.TempDir(), &log.Options{FlushPolicy: log.FlushNone}, log.State{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	w := newPeerLogWriter(b)
	n := max(b.N/peerBatch*peerBatch, peerBatch)
	b.SetBytes(peerSize)
	b.ReportAllocs()
	b.ResetTimer()
	start, u := time.Now(), startUsage()
	w.append(b, l, n)
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "records/s")
	u.report(b, n)
}

// peerLogWriter appends peerSize-byte records to a log the way peerbench's
// folio-log adapter writes W1: batches of peerBatch records encoded by one
// record.Builder (one timestamp per batch), each written by one
// log.Append. Bytes 0-7 of a record's value hold its number.
type peerLogWriter struct {
	bld  *record.Builder
	vals [][]byte
	buf  []byte
	next int
}

func newPeerLogWriter(b *testing.B) *peerLogWriter {
	bld, err := record.NewBuilder(nil)
	if err != nil {
		b.Fatal(err)
	}
	w := &peerLogWriter{bld: bld, vals: make([][]byte, peerBatch)}
	for i := range w.vals {
		w.vals[i] = make([]byte, peerSize)
	}
	return w
}

// append appends the next n records to l.
func (w *peerLogWriter) append(b *testing.B, l *log.Log, n int) {
	for end := w.next + n; w.next < end; {
		ts := time.Now().UnixMilli()
		w.bld.Reset()
		k := min(peerBatch, end-w.next)
		for i := range k {
			binary.LittleEndian.PutUint64(w.vals[i], uint64(w.next+i))
			if err := w.bld.Append(record.Record{Value: w.vals[i], Timestamp: ts}); err != nil {
				b.Fatal(err)
			}
		}
		bt, err := w.bld.Build(w.buf)
		if err != nil {
			b.Fatal(err)
		}
		w.buf = bt[:0]
		if _, _, err := l.Append(bt); err != nil {
			b.Fatal(err)
		}
		w.next += k
	}
}
