package folio

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// Defaults of ProducerOptions.
const (
	// DefaultLinger is how long a batch waits for more records by
	// default: Kafka's linger.ms default since Kafka 4.0 (KIP-1030). A
	// Flush, a synchronous Produce, or a full batch ends the wait at once.
	DefaultLinger = 5 * time.Millisecond
	// DefaultBatchBytes caps a batch's uncompressed size. A batch is
	// usually cut below it: when the linger ends, or (with no linger) when
	// the partition's previous append finishes, whatever accumulated is
	// appended.
	DefaultBatchBytes = 128 << 10
	// DefaultMaxBufferedBytes caps the memory held by records produced but
	// not yet acknowledged (Kafka's buffer.memory).
	DefaultMaxBufferedBytes = 32 << 20
)

// ProducerOptions configure a Producer. A nil *ProducerOptions, and every
// zero field, means the default stated on the field.
type ProducerOptions struct {
	// Linger is how long a partition's batch may wait for more records
	// before it is appended (Kafka's linger.ms). Default DefaultLinger
	// (5 ms). A negative Linger appends at once (linger.ms=0), when no
	// append to that partition is in progress; records produced while one
	// is still wait for it and then go together, so batches grow with the
	// load even then.
	//
	// The linger never delays a caller that waits: Flush appends every
	// buffered record at once, and a synchronous Produce appends its
	// record's batch at once. It delays only records produced with
	// ProduceAsync that nothing flushes, by at most Linger. A producer
	// that flushes after each batch of ProduceAsync calls gets its whole
	// batch in one append on Flush's goroutine (see Flush), where a
	// negative Linger hands the first record to a sender goroutine at once
	// and every batch across goroutines.
	Linger time.Duration

	// BatchBytes caps the uncompressed size of one batch, and is how many
	// bytes of unkeyed records go to one partition before the sticky
	// partitioner moves on. Default DefaultBatchBytes. A topic's
	// MaxMessageBytes caps it further. It does not cap a record: one
	// larger than BatchBytes goes in a batch of its own, and only one
	// larger than the topic's MaxMessageBytes fails (ErrMessageTooLarge).
	BatchBytes int

	// MaxBufferedBytes caps the memory held by records produced and not
	// yet acknowledged. Past it, produce blocks under its ctx until
	// appends free memory, so a producer faster than the disk slows down
	// instead of growing without bound. Default DefaultMaxBufferedBytes.
	// A record larger than the cap counts as the cap.
	MaxBufferedBytes int64

	// Compression is the codec of the batches this producer builds for
	// topics whose Compression is CompressionProducer (the default); a
	// topic that names a codec gets batches in that codec. Default
	// record.CodecNone.
	Compression record.Codec

	// ManualPartitioning sends each record to its Record.Partition. By
	// default the partition is chosen as Kafka's default partitioner does:
	// keyed records by the murmur2 hash of the key, so every Kafka client
	// agrees where a key goes; unkeyed records stick to one partition for
	// BatchBytes, then move on.
	ManualPartitioning bool

	// DisableIdempotence produces without a producer id. By default the
	// producer takes a durable producer id from the data directory and
	// numbers its batches per partition, so a partition detects a
	// duplicated or lost batch (see Broker.AppendBatch).
	DisableIdempotence bool
}

func (o *ProducerOptions) withDefaults() ProducerOptions {
	var c ProducerOptions
	if o != nil {
		c = *o
	}
	switch {
	case c.Linger == 0:
		c.Linger = DefaultLinger
	case c.Linger < 0:
		c.Linger = 0 // no linger; below, 0 means none
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	return c
}

func (o *ProducerOptions) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: ProducerOptions.%s %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	switch {
	case o.BatchBytes < record.HeaderSize:
		return bad("BatchBytes", "%d is below a batch header (%d bytes)", o.BatchBytes, record.HeaderSize)
	case o.MaxBufferedBytes < 0:
		return bad("MaxBufferedBytes", "%d is negative", o.MaxBufferedBytes)
	}
	if _, err := record.NewBuilder(&record.BuilderOptions{Codec: o.Compression}); err != nil {
		return bad("Compression", "%v: %v", o.Compression, err)
	}
	return nil
}

// Producer appends records to a Broker's topics, batching them per
// partition. Its methods are safe for concurrent use. Records of one
// partition are appended in the order their produce calls returned (for
// calls from one goroutine: in call order), and callbacks run in that order.
type Producer struct {
	b     *Broker
	opts  ProducerOptions
	pid   int64 // -1 without idempotence
	epoch int16
	mem   memGate

	// topicsMu guards topics and retired.
	topicsMu sync.Mutex
	topics   map[string]*prodTopic
	// retired holds the partitions of topics deleted and created again
	// under their name (the Producer's view moved to the new ones) while
	// they may hold records: kickAll kicks them too.
	retired []*prodPart
	// lastTopic caches the last topicFor answer while the Broker's topics
	// stay as they were (Broker.topicsGen): a producer usually writes one
	// topic, and the lookup is on every record.
	lastTopic atomic.Pointer[topicCache]

	// closed refuses produce calls. A call checks it again under its
	// partition's mu as it buffers the record, and Close sets it before it
	// kicks every partition under that mu: so no record is buffered past
	// Close's final flush, with no lock per record besides the
	// partition's.
	closed atomic.Bool

	// pending counts the batches opened and not yet settled (every record
	// buffered is in one): Flush waits for it to reach zero. It moves once
	// per batch rather than once per record, an atomic add less per
	// record. flushMu guards flushCh, which is closed and replaced
	// whenever pending reaches zero while someone waits.
	pending      atomic.Int64
	flushWaiters atomic.Int64
	flushMu      sync.Mutex
	flushCh      chan struct{}
	flushing     atomic.Int64 // Flush calls in progress: lingering is off

	senders sync.WaitGroup
	// parked counts senders waiting for their partition's next records
	// (see prodPart.send); quit, closed by Close, ends their wait.
	parked atomic.Int32
	quit   chan struct{}
	// inline counts the appends a synchronous Produce ran on its own
	// goroutine (see prodPart.sendClaimed), for tests.
	inline atomic.Int64
}

// prodTopic is a producer's view of one topic.
type prodTopic struct {
	ts          *topicState
	partitioner *topic.Partitioner
	parts       []*prodPart
}

// NewProducer returns a Producer. Unless opts.DisableIdempotence is set it
// allocates a producer id, a write to the topic catalog.
func (b *Broker) NewProducer(opts *ProducerOptions) (*Producer, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := b.writable(); err != nil {
		return nil, err
	}
	p := &Producer{
		b: b, opts: o, pid: -1, epoch: -1,
		topics:  map[string]*prodTopic{},
		flushCh: make(chan struct{}),
		quit:    make(chan struct{}),
	}
	p.mem.init(o.MaxBufferedBytes)
	if !o.DisableIdempotence {
		id, err := b.catalog.AllocateProducerID()
		if err != nil {
			return nil, fmt.Errorf("folio: allocating a producer id: %w", err)
		}
		if b.cluster != nil {
			id = b.cluster.meta.AllocateProducerID(id) // unique in the cluster
		}
		p.pid, p.epoch = id, 0
	}
	b.clientsMu.Lock()
	defer b.clientsMu.Unlock()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	b.producers[p] = struct{}{}
	return p, nil
}

// ProducerID returns the producer's id and epoch, or -1, -1 without
// idempotence.
func (p *Producer) ProducerID() (id int64, epoch int16) { return p.pid, p.epoch }

// Produce appends rec and waits for its acknowledgement under the topic's
// flush policy, returning where it went (also set in rec.Partition and
// rec.Offset).
//
// If ctx has ended before the call, or ends while Produce waits for buffer
// memory, the record was not produced and the error is ctx's. If ctx ends
// after the record was buffered, the error wraps ErrUnknownOutcome and
// ctx's error: the record may still be written (its fate can be learned by
// reading the partition). rec may be reused once Produce returns.
//
// With a ctx that can never end (context.Background), the append may run
// on the calling goroutine instead of the partition's sender, when nothing
// else of the partition is waiting or being appended: one hand-off less
// each way. It runs no other caller's callback there.
func (p *Producer) Produce(ctx context.Context, rec *Record) (partition int32, offset int64, err error) {
	// The producer works on a copy, so that after an unknown outcome it
	// never writes to rec behind the caller's back. The copy, its channel
	// and callback come from a pool (a Produce per record would otherwise
	// allocate them per record), and go back only once the callback has
	// run: after an unknown outcome they are left to the collector.
	w := syncProduces.Get().(*syncProduce)
	w.rec = *rec
	settled := func(err error) (int32, int64, error) {
		part, off := w.rec.Partition, w.rec.Offset
		w.rec = Record{}
		syncProduces.Put(w)
		if err != nil {
			return -1, -1, err
		}
		rec.Partition, rec.Offset = part, off
		return part, off, nil
	}
	// A ctx that can never end leaves nothing to wait for but the
	// outcome, so the append may run on this goroutine: when the
	// partition's batch holds this record alone and no append is under
	// way, it is taken here (no hand-off to the sender and back; the only
	// callback it runs is this call's own).
	buffered, pp, own := p.produce(ctx, &w.rec, w.callback, true, ctx.Done() == nil)
	if !buffered {
		return settled(<-w.done)
	}
	if own != nil {
		pp.sendClaimed(own)
		return settled(<-w.done)
	}
	select {
	case err := <-w.done:
		return settled(err)
	case <-ctx.Done():
		select {
		case err := <-w.done: // settled meanwhile: report the real outcome
			return settled(err)
		default:
		}
		return -1, -1, fmt.Errorf("%w: %w", ErrUnknownOutcome, context.Cause(ctx))
	}
}

// syncProduce is what Produce hands the producer: its own copy of the
// record, and the callback that reports the outcome on done.
type syncProduce struct {
	rec      Record
	done     chan error
	callback func(*Record, error)
}

var syncProduces = sync.Pool{New: func() any {
	w := &syncProduce{done: make(chan error, 1)}
	w.callback = func(_ *Record, err error) { w.done <- err }
	return w
}}

// ProduceAsync buffers rec and returns; callback (which may be nil) is
// called exactly once with rec and the outcome: nil once the record is
// acknowledged under the topic's flush policy (rec.Partition and rec.Offset
// are then set), or the error. ctx bounds only the wait for buffer memory:
// if it ends first the callback gets ctx's error and the record was not
// produced. Once buffered, the record's outcome is always reported, even
// after ctx ends.
//
// Callbacks run on the producer's goroutines, or on the goroutine of a
// Flush that appends them (see Flush), one partition's in offset order; a
// slow callback delays the partition's next append. A callback must not
// call Flush, Close, or a synchronous Produce: each waits for appends that
// wait for the callback to return. ProduceAsync is fine.
func (p *Producer) ProduceAsync(ctx context.Context, rec *Record, callback func(*Record, error)) {
	if callback == nil {
		callback = func(*Record, error) {}
	}
	p.produce(ctx, rec, callback, false, false)
}

// produce buffers rec, or calls cb with the reason it did not, and reports
// whether it buffered it. With wait (a synchronous Produce) the batch
// holding rec is due at once: its caller waits, so it does not linger.
// With claim (a synchronous Produce whose ctx cannot end, whose cb is its
// own), the batch holding rec alone may be handed back as own, with the
// partition's sending role taken for it: the caller appends it with
// pp.sendClaimed.
func (p *Producer) produce(ctx context.Context, rec *Record, cb func(*Record, error), wait, claim bool) (buffered bool, pp *prodPart, own []*pendingBatch) {
	if p.closed.Load() {
		cb(rec, ErrClosed)
		return false, nil, nil
	}
	if ctx.Err() != nil {
		// Settle a call made with an ended ctx definitely: not produced.
		cb(rec, context.Cause(ctx))
		return false, nil, nil
	}
	pp, alone, err := p.route(rec)
	if err != nil {
		cb(rec, err)
		return false, nil, nil
	}
	size := memSize(rec)
	if err := p.mem.acquire(ctx, size, &p.closed, p.b); err != nil {
		cb(rec, err)
		return false, nil, nil
	}
	own, err = pp.add(rec, cb, size, alone, wait, claim)
	if err != nil {
		p.mem.release(size)
		cb(rec, err)
		return false, nil, nil
	}
	return true, pp, own
}

// route finds the partition rec goes to and checks that it fits a batch.
// It returns the size of a batch holding rec alone (aloneBatchSize), which
// add needs too.
func (p *Producer) route(rec *Record) (*prodPart, int, error) {
	pt, err := p.topicFor(rec.Topic)
	if err != nil {
		return nil, 0, err
	}
	if rec.Key == nil && pt.ts.info.Config.Cleanup.Compacts() {
		return nil, 0, fmt.Errorf("%w: topic %q", ErrNoKey, rec.Topic)
	}
	n := int32(len(pt.parts))
	alone := aloneBatchSize(rec)
	var idx int32
	switch {
	case p.opts.ManualPartitioning:
		if err := topic.CheckPartition(rec.Partition, n); err != nil {
			return nil, 0, fmt.Errorf("%w: %s-%d: %w", ErrUnknownPartition, rec.Topic, rec.Partition, err)
		}
		idx = rec.Partition
	case n == 1:
		// Every partitioner picks the only partition; the sticky one would
		// take its mutex per record to say so. Should the topic grow, its
		// sticky partition is still unset and is picked then.
		idx = 0
	default:
		if idx, err = pt.partitioner.Partition(rec.Key, alone, n); err != nil {
			return nil, 0, fmt.Errorf("folio: partitioning for %q: %w", rec.Topic, err)
		}
	}
	pp := pt.parts[idx]
	// BatchBytes caps how many records go together, not how large one may
	// be: a record above it that fits the topic's max.message.bytes goes
	// in a batch of its own (add seals the batches around it), as with
	// Kafka's batch.size.
	if maxBatch := pp.p.MaxBatchBytes(); alone > maxBatch {
		return nil, 0, fmt.Errorf("%w: record of %d bytes in a batch of its own; %s takes batches up to %d bytes (max.message.bytes)",
			ErrMessageTooLarge, alone, pp.p, maxBatch)
	}
	return pp, alone, nil
}

type topicCache struct {
	gen  uint64
	name string
	pt   *prodTopic
}

// topicFor returns the producer's view of a topic, refreshed when the
// topic's partitions changed or it was deleted and created again.
func (p *Producer) topicFor(name string) (*prodTopic, error) {
	gen := p.b.topicsGen.Load()
	if c := p.lastTopic.Load(); c != nil && c.gen == gen && c.name == name {
		return c.pt, nil
	}
	pt, err := p.topicForSlow(name)
	if err == nil {
		p.lastTopic.Store(&topicCache{gen: gen, name: name, pt: pt})
	}
	return pt, err
}

func (p *Producer) topicForSlow(name string) (*prodTopic, error) {
	ts, ok := (*p.b.topics.Load())[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	p.topicsMu.Lock()
	defer p.topicsMu.Unlock()
	pt := p.topics[name]
	if pt != nil && pt.ts == ts {
		return pt, nil
	}
	npt := &prodTopic{ts: ts, parts: make([]*prodPart, len(ts.parts))}
	if pt != nil && pt.ts.info.ID == ts.info.ID {
		// Grown: keep the partitioner and the partitions' buffers.
		npt.partitioner = pt.partitioner
		copy(npt.parts, pt.parts)
	} else {
		part, err := topic.NewPartitioner(&topic.PartitionerOptions{StickyBytes: int64(p.opts.BatchBytes)})
		if err != nil {
			return nil, err
		}
		npt.partitioner = part
		if pt != nil {
			// Deleted and created again: the old partitions' buffered
			// records (their appends fail: deleted) must still be
			// settled, and Close must wait for them. Flush and Close
			// keep kicking them until they hold nothing.
			p.retired = append(p.retired, pt.parts...)
		}
	}
	for i, part := range ts.parts {
		if npt.parts[i] == nil {
			npt.parts[i] = newProdPart(p, part, npt.partitioner, int32(len(ts.parts)))
		}
	}
	p.topics[name] = npt
	return npt, nil
}

// finish accounts for a batch whose records, of size bytes, are settled
// (acknowledged or failed), or dropped empty, and wakes Flush when nothing
// is pending.
func (p *Producer) finish(size int64) {
	p.mem.release(size)
	if p.pending.Add(-1) == 0 && p.flushWaiters.Load() > 0 {
		p.flushMu.Lock()
		close(p.flushCh)
		p.flushCh = make(chan struct{})
		p.flushMu.Unlock()
	}
}

// Flush appends every buffered record now, without lingering, and waits
// until every record produced before and during the call is settled (its
// callback ran). If ctx ends first it returns ctx's error; the records'
// outcomes are then still reported to their callbacks. A record's failure
// is reported to its callback only: Flush returns nil once every record
// settled, acknowledged or failed, so a caller that must know counts the
// failures in its callbacks (see the README's program).
//
// With a ctx that can never end (context.Background), one partition's
// buffered records may be appended on the calling goroutine instead of
// its sender's, when no append of that partition is under way: no hand-off
// to the sender and back, the common case of a producer that flushes after
// each batch. Their callbacks then run on the calling goroutine, before
// Flush returns, as they would have before it returned anyway.
func (p *Producer) Flush(ctx context.Context) error {
	p.flushing.Add(1)
	defer p.flushing.Add(-1)
	if pp, own := p.kickAll(ctx.Done() == nil); own != nil {
		// Before Flush counts itself a waiter, so that the append's
		// settling has no waiter to wake.
		pp.sendClaimed(own)
	}
	p.flushWaiters.Add(1)
	defer p.flushWaiters.Add(-1)
	for {
		p.flushMu.Lock()
		ch := p.flushCh
		p.flushMu.Unlock()
		if p.pending.Load() == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// kickAll starts the append of every partition's buffered records. It
// kicks under topicsMu rather than copying the partitions aside, an
// allocation per Flush: kick takes only pp.mu, and nothing holding a
// pp.mu takes topicsMu. With claim, the first partition that has records
// to append and no append under way is not handed to a sender: its
// batches come back as own, with the sending role taken for them, for the
// caller to append with pp.sendClaimed once topicsMu is released (a
// callback may produce to a topic the producer has not met, which takes
// topicsMu).
func (p *Producer) kickAll(claim bool) (pp *prodPart, own []*pendingBatch) {
	p.topicsMu.Lock()
	defer p.topicsMu.Unlock()
	p.retired = slices.DeleteFunc(p.retired, func(part *prodPart) bool { return !part.kickRetired() })
	for _, pt := range p.topics {
		for _, part := range pt.parts {
			if claim && own == nil {
				if own = part.kick(true); own != nil {
					pp = part
				}
				continue
			}
			part.kick(false)
		}
	}
	return pp, own
}

// Close appends what is buffered, waits for every outcome to be reported,
// and releases the producer. Produce calls after Close (or blocked in it
// waiting for memory) fail with ErrClosed. Close is idempotent; later calls
// return ErrClosed.
func (p *Producer) Close() error {
	if !p.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	p.mem.wake()
	p.flushing.Add(1)
	// kickAll takes every partition's mu after closed is set: a produce
	// call buffering a record holds it, and one after it sees closed (add).
	// A partition opened after kickAll passed sees closed too.
	p.kickAll(false)
	close(p.quit) // parked senders append what kickAll gave them, then exit
	p.senders.Wait()
	p.b.clientsMu.Lock()
	delete(p.b.producers, p)
	p.b.clientsMu.Unlock()
	return nil
}

// prodPart buffers one partition's records for a Producer and appends them
// from its sender goroutine, which runs while there is work and, when there
// is none, parks for the next records (up to maxParked per Producer, until
// Close) or exits.
type prodPart struct {
	pr          *Producer
	p           *brokerPart
	partitioner *topic.Partitioner
	nparts      int32
	// batchBytes is the producer's BatchBytes: a batch is sealed at
	// min(batchBytes, the partition's MaxBatchBytes) uncompressed bytes,
	// and a record above it goes alone. The partition's limit is read on
	// each use, since a topic's max.message.bytes can change while open
	// (Broker.AlterTopicConfig).
	batchBytes int

	// mu guards the fields up to seq.
	mu      sync.Mutex
	cur     *pendingBatch   // the open batch
	ready   []*pendingBatch // full batches, oldest first
	sending bool            // a sender goroutine is running
	parked  bool            // the sender waits on wake for the next records
	wake    chan struct{}   // hands a parked sender its next records
	timer   *time.Timer     // linger timer, armed while cur waits
	// held is the list of batches a caller that takes the sending role
	// (add and kick with claim) appends on its own goroutine, reused so
	// that taking them allocates nothing; it belongs to the role's holder.
	held []*pendingBatch

	// Owned by the running sender.
	seq  int32    // the next batch's base sequence
	bufs [][]byte // reused encode buffers, one per batch of an append
	// parts and built are appendBatches' lists, kept between appends
	// (emptied of their references) so that an append allocates none.
	parts []encoded
	built []record.Batch
	// settleBuf is the settlement of an append settled on the sender's
	// goroutine, reused; inflight the done channels of the appends waiting
	// for their acknowledgement on goroutines of their own, oldest first.
	settleBuf settlement
	inflight  []chan struct{}
}

// pendingBatch is a batch being filled: its encoder and, in order, the
// records in it with their callbacks.
type pendingBatch struct {
	bld   *record.Builder
	codec record.Codec // bld's, for its pool
	recs  []pendingRec
	mem   int64
	due   bool // the linger expired
	// now is the time the batch was opened, in Unix milliseconds: the
	// timestamp of its records produced without one. A clock read costs
	// 150 ns on a virtual machine, a third of producing a record, and a
	// batch is open for at most Linger plus one append, so its records'
	// calls were all within that of it.
	now int64
}

// pendingRec is a buffered record and its callback. The timestamp it was
// encoded with, which a rebuild needs, is not kept: it is the record's own,
// or, for one produced without, its batch's now.
type pendingRec struct {
	rec *Record
	cb  func(*Record, error)
}

func newProdPart(pr *Producer, p *brokerPart, part *topic.Partitioner, n int32) *prodPart {
	return &prodPart{
		pr: pr, p: p, partitioner: part, nparts: n,
		batchBytes: pr.opts.BatchBytes,
		wake:       make(chan struct{}, 1),
		seq:        0,
	}
}

// batchCodec is the codec of a batch begun now: the topic's storage codec
// when it names one (no recompression), else the producer's. It is read
// for every batch, since a topic's compression.type can change while open
// (Broker.AlterTopicConfig).
func (pp *prodPart) batchCodec() record.Codec {
	if c, ok := pp.p.Config().Compression.Codec(); ok {
		return c
	}
	return pp.pr.opts.Compression
}

var builderPool sync.Map // record.Codec -> *sync.Pool of *record.Builder

// getBuilder returns a pooled Builder for codec. The codec comes from
// validated options or a topic's configuration, so NewBuilder fails only on
// a programming error, which the record's callback then reports.
func getBuilder(codec record.Codec) (*record.Builder, error) {
	if b, ok := codecPool(codec).Get().(*record.Builder); ok {
		return b, nil
	}
	return record.NewBuilder(&record.BuilderOptions{Codec: codec})
}

func putBuilder(codec record.Codec, b *record.Builder) {
	b.Reset()
	codecPool(codec).Put(b)
}

// codecPool returns codec's Builder pool. It looks the pool up before
// storing one: LoadOrStore's argument, a new Pool, would otherwise be
// allocated on every call, twice per batch.
func codecPool(codec record.Codec) *sync.Pool {
	if pool, ok := builderPool.Load(codec); ok {
		return pool.(*sync.Pool)
	}
	pool, _ := builderPool.LoadOrStore(codec, &sync.Pool{})
	return pool.(*sync.Pool)
}

// add puts rec, whose batch alone would be alone bytes, in the open batch
// (due at once with wait) and makes sure it will be appended: by the
// sender, or, with claim, when
// the batch holds rec alone, due now, and no append is under way, by the
// caller, to whom add then hands the batch (own) with the sending role
// taken (see sendClaimed).
func (pp *prodPart) add(rec *Record, cb func(*Record, error), size int64, alone int, wait, claim bool) (own []*pendingBatch, err error) {
	pp.mu.Lock()
	if pp.pr.closed.Load() {
		// Close set it before its final kick of this partition, which
		// takes pp.mu: a record buffered now would miss that flush.
		pp.mu.Unlock()
		return nil, ErrClosed
	}
	lagging, err := pp.addLocked(rec, cb, size, alone)
	if err == nil {
		if wait {
			pp.cur.due = true
		}
		if claim && !pp.sending && len(pp.ready) == 0 && len(pp.cur.recs) == 1 && pp.takeCurLocked() {
			own, pp.cur = append(pp.held[:0], pp.cur), nil
			pp.held = own
			if pp.timer != nil {
				pp.timer.Stop()
				pp.timer = nil
			}
			pp.sending = true
			pp.pr.senders.Add(1) // Close waits for this append as for a sender's
		} else {
			pp.scheduleLocked()
		}
	} else {
		// addLocked may have sealed the open batch before it failed:
		// append that one as a successful add would have.
		pp.scheduleLocked()
	}
	pp.mu.Unlock()
	if lagging {
		// Producing goroutines that never block can keep every P busy
		// and starve the sender until the memory cap stops them; give
		// it the processor instead, while full batches queue up.
		runtime.Gosched()
	}
	return own, err
}

// sendClaimed appends own, the batches add or kick handed the caller with
// the sending role, on the caller's goroutine, then gives up the role:
// records that came meanwhile go to the sender as usual. The role is given
// up even if a callback panics, so that the partition's later records
// still reach a sender.
func (pp *prodPart) sendClaimed(own []*pendingBatch) {
	defer func() {
		pp.mu.Lock()
		pp.sending = false
		pp.scheduleLocked()
		pp.mu.Unlock()
		pp.pr.senders.Done()
	}()
	pp.pr.inline.Add(1)
	pp.appendBatches(own, true)
	clear(own) // pp.held: drop the settled batches
}

// addLocked is add under pp.mu, short of scheduling the append; it reports
// whether the sender lags behind (full batches queue up while it runs).
func (pp *prodPart) addLocked(rec *Record, cb func(*Record, error), size int64, alone int) (lagging bool, err error) {
	r := record.Record{Key: rec.Key, Value: rec.Value, Headers: rec.Headers}
	stamped := !rec.Timestamp.IsZero()
	if stamped {
		r.Timestamp = rec.Timestamp.UnixMilli()
	}
	if pp.cur != nil && pp.cur.bld.Len() > 0 && pp.cur.bld.Size()+alone-record.HeaderSize > min(pp.batchBytes, pp.p.MaxBatchBytes()) {
		pp.sealLocked()
		lagging = pp.sending && len(pp.ready) >= lagBatches
	}
	if pp.cur == nil {
		codec := pp.batchCodec()
		bld, err := getBuilder(codec)
		if err != nil {
			return lagging, fmt.Errorf("folio: a batch builder for %s: %w", pp.p, err)
		}
		pp.cur = getPendingBatch(bld, codec)
		pp.cur.now = pp.pr.b.opts.Now().UnixMilli()
		pp.pr.pending.Add(1) // settled by finish, appended or dropped
	}
	if !stamped {
		r.Timestamp = pp.cur.now
	}
	if err := pp.cur.bld.Append(r); err != nil {
		if len(pp.cur.recs) == 0 {
			// An empty batch is never appended: drop it, or Flush would
			// wait for it for ever.
			// The linger timer, if armed, is a sealed batch's: leave it.
			pb := pp.cur
			pp.cur = nil
			putBuilder(pb.codec, pb.bld)
			putPendingBatch(pb)
			pp.pr.finish(0)
		}
		return lagging, fmt.Errorf("folio: encoding a record for %s: %w", pp.p, err)
	}
	pp.cur.recs = append(pp.cur.recs, pendingRec{rec: rec, cb: cb})
	pp.cur.mem += size
	return lagging, nil
}

// lagBatches is how many full batches may wait for a busy sender before a
// producing goroutine yields to it.
const lagBatches = 2

// sealLocked moves the open batch to the ready list, and moves unkeyed
// records to another partition as Kafka's sticky partitioner does when a
// batch fills.
func (pp *prodPart) sealLocked() {
	pp.ready = append(pp.ready, pp.cur)
	pp.cur = nil
	pp.partitioner.OnNewBatch(pp.p.Index(), pp.nparts)
}

// scheduleLocked starts the sender if there is something it should append
// now, or arms the linger timer.
func (pp *prodPart) scheduleLocked() {
	if pp.sending {
		return
	}
	if len(pp.ready) > 0 || pp.takeCurLocked() {
		pp.sending = true
		if pp.parked {
			pp.parked = false
			pp.pr.parked.Add(-1)
			pp.wake <- struct{}{} // never blocks: one token per park
			return
		}
		pp.pr.senders.Add(1)
		go pp.send()
		return
	}
	if pp.cur != nil && pp.timer == nil {
		pp.timer = time.AfterFunc(pp.pr.opts.Linger, pp.lingerDone)
	}
}

// takeCurLocked reports whether the open batch should go with the next
// append rather than wait for more records.
func (pp *prodPart) takeCurLocked() bool {
	if pp.cur == nil || pp.cur.bld.Len() == 0 {
		return false
	}
	return pp.pr.opts.Linger == 0 || pp.cur.due || pp.pr.flushing.Load() > 0
}

func (pp *prodPart) lingerDone() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.timer = nil
	if pp.cur != nil {
		pp.cur.due = true
	}
	pp.scheduleLocked()
}

// kickRetired kicks a retired partition (see Producer.retired) and reports
// whether it may still hold records: buffered, or in an append.
func (pp *prodPart) kickRetired() bool {
	pp.kick(false)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.cur != nil || len(pp.ready) > 0 || pp.sending
}

// kick appends whatever is buffered now (Flush, Close). With claim, when
// no append is under way, it takes the buffered batches and the sending
// role for the caller instead of handing them to a sender, and returns
// them (see sendClaimed).
func (pp *prodPart) kick(claim bool) (own []*pendingBatch) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.timer != nil {
		pp.timer.Stop()
		pp.timer = nil
	}
	if pp.cur != nil {
		pp.cur.due = true
	}
	if claim && !pp.sending && (len(pp.ready) > 0 || pp.takeCurLocked()) {
		own = append(pp.held[:0], pp.ready...)
		clear(pp.ready)
		pp.ready = pp.ready[:0]
		if pp.takeCurLocked() {
			own = append(own, pp.cur)
			pp.cur = nil
		}
		pp.held = own
		pp.sending = true
		pp.pr.senders.Add(1) // Close waits for this append as for a sender's
		return own
	}
	pp.scheduleLocked()
	return nil
}

// send appends batches until there are none to append.
func (pp *prodPart) send() {
	defer pp.pr.senders.Done()
	first := true
	for {
		pp.mu.Lock()
		batches := pp.ready
		pp.ready = nil
		if pp.takeCurLocked() {
			batches = append(batches, pp.cur)
			pp.cur = nil
			if pp.timer != nil {
				pp.timer.Stop()
				pp.timer = nil
			}
		}
		if len(batches) == 0 {
			pp.sending = false
			if !pp.parkLocked() {
				pp.scheduleLocked() // arms the linger timer for a waiting batch
				pp.mu.Unlock()
				return
			}
			pp.scheduleLocked()
			pp.mu.Unlock()
			select {
			case <-pp.wake:
			case <-pp.pr.quit:
				pp.mu.Lock()
				if pp.parked { // not handed work: Close ended the wait
					pp.parked = false
					pp.pr.parked.Add(-1)
					pp.mu.Unlock()
					return
				}
				pp.mu.Unlock()
				<-pp.wake // handed work just as Close came
			}
			first = true
			continue
		}
		pp.mu.Unlock()
		if !first {
			// The previous append woke whoever waits for it (consumers at
			// the high watermark, Produce callers); the runtime queued them
			// to run next on this thread, which the next append would keep
			// in a write and, under FlushSync, an fsync for a long while.
			// Let them run first.
			runtime.Gosched()
		}
		first = false
		pp.appendBatches(batches, false)
	}
}

// maxParked is how many senders of one Producer may wait for their
// partition's next records instead of exiting. A producer that appends
// to a partition over and over (a Flush per batch, records trickling in)
// then hands each append to a running goroutine, whose stack has already
// grown to the depth of an append, rather than starting one: a fresh
// goroutine's stack was copied several times on the way down to the
// write, about a tenth of the CPU of producing one record. The cap keeps
// a producer over many partitions from holding a goroutine for each.
const maxParked = 64

// parkLocked reports whether the sender, finding nothing to append, may
// wait for the partition's next records instead of exiting, and if so
// marks it parked. pp.mu must be held.
func (pp *prodPart) parkLocked() bool {
	select {
	case <-pp.pr.quit:
		return false // closing: no new waits
	default:
	}
	if pp.pr.parked.Add(1) > maxParked {
		pp.pr.parked.Add(-1)
		return false
	}
	pp.parked = true
	return true
}

// encoded is a batch ready to append, or records refused on their own,
// in the order of the pending batch they came from.
type encoded struct {
	batch record.Batch // nil when err is set
	recs  []pendingRec
	err   error
}

// appendBatches encodes and appends batches, then settles their records:
// at once when there is nothing to wait for, or with inline (a caller
// that waits for them anyway: a Flush, a synchronous Produce) once their
// acknowledgement comes, else on a goroutine that waits for it while the
// sender goes on to the partition's next records.
func (pp *prodPart) appendBatches(batches []*pendingBatch, inline bool) {
	parts := pp.parts[:0]
	seq := pp.seq
	bufi := 0
	for _, pb := range batches {
		parts = pp.encode(parts, pb.bld, pb.recs, pb.now, &seq, &bufi)
	}
	built := pp.built[:0]
	defer func() {
		clear(parts) // the callers' records
		clear(built)
		pp.parts, pp.built = parts[:0], built[:0]
	}()
	for _, e := range parts {
		if e.err == nil {
			built = append(built, e.batch)
		}
	}
	var err error
	var ack partition.AppendAck
	n := 0
	if len(built) > 0 {
		// A partition's appends that wait (an fsync under FlushSync,
		// replication) have as many in flight as overlapping group
		// commits: more would only cut the records arriving meanwhile
		// into smaller batches.
		pp.awaitInflight(maxInflight - 1)
		// No ctx: the sender reports every outcome, however long the
		// acknowledgement takes.
		n, ack, err = pp.p.AppendProducedNoWait(context.Background(), pp.pr.pid, built)
		err = brokerErr(err)
	}
	// Sequences advance by what was written only, so a batch refused
	// without being written leaves no gap for the next one to trip on.
	for _, bt := range built[:n] {
		pp.seq = nextSequence(pp.seq, bt.LastOffsetDelta()+1)
	}
	// What each group of records gets: its refusal, or the base offset of
	// its written batch (the batch's bytes are the sender's to reuse once
	// written). On an error no record of the append is acknowledged, not
	// even those of batches written before the failure: under FlushSync
	// they were never fsynced. Their error says the outcome is unknown
	// (ErrUnknownOutcome) where offsets were assigned.
	deferred := ack.Pending() && !inline
	st := &pp.settleBuf
	if deferred {
		st = &settlement{}
	}
	st.batches = append(st.batches[:0], batches...)
	st.groups = st.groups[:0]
	k := 0 // index into built
	for _, e := range parts {
		g := settleGroup{recs: e.recs, err: e.err, base: -1}
		if e.err == nil {
			if err == nil && k < n {
				g.base = built[k].BaseOffset()
			} else {
				g.err = err
			}
			k++
		}
		st.groups = append(st.groups, g)
	}
	if !deferred {
		// Settled here, after the partition's appends still waiting
		// (their callbacks come first).
		werr := ack.Wait()
		pp.awaitInflight(0)
		pp.settle(st, werr)
		return
	}
	// The acknowledgement is waited for beside the next appends, whose
	// fsync then starts beside this one's instead of after it, and the
	// callbacks run after those of the partition's earlier appends.
	st.prev = pp.lastInflight()
	st.done = make(chan struct{})
	pp.inflight = append(pp.inflight, st.done)
	pp.pr.senders.Add(1)
	go func() {
		defer pp.pr.senders.Done()
		werr := ack.Wait()
		if st.prev != nil {
			<-st.prev
		}
		pp.settle(st, werr)
		close(st.done)
	}()
}

// maxInflight is how many appends of a partition may wait for their
// acknowledgement at once: as many as the log's overlapping group commits.
const maxInflight = 2

// settlement is what an append's records get once its acknowledgement is
// known: their groups, in order, and the pending batches to release.
type settlement struct {
	groups  []settleGroup
	batches []*pendingBatch
	prev    chan struct{} // closed once the previous append is settled
	done    chan struct{} // closed once this one is
}

// settleGroup is the records of one encoded batch: refused (err), or
// written at base, acknowledged unless the wait fails.
type settleGroup struct {
	recs []pendingRec
	err  error
	base int64
}

// settle runs the callbacks of st's records, with ackErr for those written
// when the acknowledgement failed, and releases its batches.
func (pp *prodPart) settle(st *settlement, ackErr error) {
	index := pp.p.Index()
	for _, g := range st.groups {
		err := g.err
		if err == nil && ackErr != nil {
			err = ackErr
		}
		if err != nil {
			for _, r := range g.recs {
				r.cb(r.rec, err)
			}
			continue
		}
		for j, r := range g.recs {
			r.rec.Partition = index
			r.rec.Offset = g.base + int64(j)
			r.cb(r.rec, nil)
		}
	}
	for _, pb := range st.batches {
		pp.pr.finish(pb.mem)
		putBuilder(pb.codec, pb.bld)
		putPendingBatch(pb)
	}
	clear(st.groups) // the callers' records
	clear(st.batches)
}

// awaitInflight waits until at most n of the partition's appends wait for
// their acknowledgement. Only the sending role calls it.
func (pp *prodPart) awaitInflight(n int) {
	for len(pp.inflight) > 0 {
		select {
		case <-pp.inflight[0]:
			pp.inflight = slices.Delete(pp.inflight, 0, 1)
			continue
		default:
		}
		if len(pp.inflight) <= n {
			return
		}
		<-pp.inflight[0]
	}
}

// lastInflight is the done channel of the partition's last append still
// waiting for its acknowledgement, nil for none.
func (pp *prodPart) lastInflight() chan struct{} {
	if len(pp.inflight) == 0 {
		return nil
	}
	return pp.inflight[len(pp.inflight)-1]
}

// pendingBatchPool recycles pending batches with their record slices, which
// otherwise grow from empty (and are copied at every doubling) for every
// batch of every partition.
var pendingBatchPool = sync.Pool{New: func() any { return new(pendingBatch) }}

// maxPooledRecs caps the record slice a pooled batch keeps.
const maxPooledRecs = 4096

func getPendingBatch(bld *record.Builder, codec record.Codec) *pendingBatch {
	pb := pendingBatchPool.Get().(*pendingBatch)
	pb.bld, pb.codec = bld, codec
	return pb
}

// putPendingBatch returns pb, whose records are settled and whose builder
// went back to its pool, dropping its references to the caller's records.
func putPendingBatch(pb *pendingBatch) {
	if cap(pb.recs) > maxPooledRecs {
		return // an outsized batch's slice is left to the collector
	}
	clear(pb.recs)
	*pb = pendingBatch{recs: pb.recs[:0]}
	pendingBatchPool.Put(pb)
}

// encode builds the batch of recs held by bld, numbering it from *seq, into
// one of the reused buffers. A compressed batch can come out larger than
// the uncompressed size that bounded it and than the topic takes; then the
// records are split in halves and rebuilt, down to a record that does not
// fit on its own, which fails with ErrMessageTooLarge as Kafka's broker
// would refuse it. now is the batch's pendingBatch.now, the timestamp its
// records produced without one were encoded with.
func (pp *prodPart) encode(out []encoded, bld *record.Builder, recs []pendingRec, now int64, seq *int32, bufi *int) []encoded {
	if pp.pr.pid >= 0 {
		bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = pp.pr.pid, pp.pr.epoch, *seq
	}
	if *bufi == len(pp.bufs) {
		pp.bufs = append(pp.bufs, nil)
	}
	bt, err := bld.Build(pp.bufs[*bufi])
	if err != nil {
		return append(out, encoded{recs: recs, err: fmt.Errorf("folio: encoding a batch for %s: %w", pp.p, err)})
	}
	pp.bufs[*bufi] = bt[:cap(bt)]
	maxBatch := pp.p.MaxBatchBytes()
	if len(bt) <= maxBatch {
		*bufi++
		*seq = nextSequence(*seq, bt.LastOffsetDelta()+1)
		return append(out, encoded{batch: bt, recs: recs})
	}
	if len(recs) == 1 {
		return append(out, encoded{recs: recs, err: fmt.Errorf("%w: the record compresses to a batch of %d bytes; %s takes up to %d",
			ErrMessageTooLarge, len(bt), pp.p, maxBatch)})
	}
	half := len(recs) / 2
	codec := pp.batchCodec()
	for _, sub := range [][]pendingRec{recs[:half], recs[half:]} {
		b, err := getBuilder(codec)
		if err != nil {
			out = append(out, encoded{recs: sub, err: fmt.Errorf("folio: a batch builder for %s: %w", pp.p, err)})
			continue
		}
		for _, r := range sub {
			rr := record.Record{Key: r.rec.Key, Value: r.rec.Value, Headers: r.rec.Headers, Timestamp: now}
			if !r.rec.Timestamp.IsZero() {
				rr.Timestamp = r.rec.Timestamp.UnixMilli()
			}
			if err := b.Append(rr); err != nil {
				out = append(out, encoded{recs: sub, err: fmt.Errorf("folio: encoding a record for %s: %w", pp.p, err)})
				b = nil
				break
			}
		}
		if b != nil {
			out = pp.encode(out, b, sub, now, seq, bufi)
			putBuilder(codec, b) // the bytes live in pp.bufs
		}
	}
	return out
}

// nextSequence is Kafka's DefaultRecordBatch.incrementSequence: sequences
// wrap from math.MaxInt32 to 0.
func nextSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// memGate caps the bytes of buffered records. Acquiring is one atomic add
// when there is room; waiters block on a channel that release closes, so
// nothing polls.
type memGate struct {
	limit   int64
	used    atomic.Int64
	waiters atomic.Int64
	// mu guards ch, closed and replaced to wake waiters.
	mu sync.Mutex
	ch chan struct{}
}

func (g *memGate) init(limit int64) {
	g.limit = limit
	g.ch = make(chan struct{})
}

// acquire takes n bytes (at most the limit), waiting under ctx while there
// is no room. It fails with ErrClosed once closed is set. The path with
// room is small enough to be inlined into every produce call.
func (g *memGate) acquire(ctx context.Context, n int64, closed *atomic.Bool, b *Broker) error {
	if u := g.used.Load(); u+n <= g.limit && g.used.CompareAndSwap(u, u+n) {
		return nil
	}
	return g.acquireSlow(ctx, n, closed, b)
}

// tryAcquire takes n bytes if they fit. A compare-and-swap, not an add
// taken back on failure: a transient add would make other callers see the
// gate fuller than what is held, so that all of them could fail and sleep
// with nothing held to release and wake them.
func (g *memGate) tryAcquire(n int64) bool {
	for {
		u := g.used.Load()
		if u+n > g.limit {
			return false
		}
		if g.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// acquireSlow is acquire when n bytes did not fit at once: it caps them
// at the limit, and tries again or waits.
func (g *memGate) acquireSlow(ctx context.Context, n int64, closed *atomic.Bool, b *Broker) error {
	n = min(n, g.limit)
	if g.tryAcquire(n) {
		return nil
	}
	start := time.Now()
	b.producerBlock.Add(1)
	defer func() { b.metrics.ProduceBlocked(time.Since(start)) }()
	// Register, then re-check: release subtracts, then reads waiters, so
	// one of the two sees the other (sequentially consistent atomics).
	// What used counts is held, so a waiter that finds no room is woken
	// by the release that makes it.
	g.waiters.Add(1)
	defer g.waiters.Add(-1)
	for {
		g.mu.Lock()
		ch := g.ch
		g.mu.Unlock()
		if closed.Load() {
			return ErrClosed
		}
		if g.tryAcquire(n) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (g *memGate) release(n int64) {
	n = min(n, g.limit)
	g.used.Add(-n)
	if g.waiters.Load() > 0 {
		g.wake()
	}
}

// wake wakes every waiter to re-check.
func (g *memGate) wake() {
	g.mu.Lock()
	close(g.ch)
	g.ch = make(chan struct{})
	g.mu.Unlock()
}
