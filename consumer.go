package folio

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// Defaults of ConsumerOptions.
const (
	// DefaultMaxPollRecords is Kafka's max.poll.records.
	DefaultMaxPollRecords = 500
	// DefaultFetchBytes is how many bytes of batches one read of a
	// partition returns at most (Kafka's max.partition.fetch.bytes); a
	// larger batch is still returned whole.
	DefaultFetchBytes = 1 << 20
)

// ResetPolicy says where a consumer goes without a valid position (Kafka's
// auto.offset.reset): ResetEarliest (the zero value and default),
// ResetLatest or ResetNone. For a Consumer, it applies when the position
// lies outside the partition's offsets, typically below the log start
// offset after retention deleted the records; for a GroupConsumer, also in
// a partition the group has no committed offset for. It is the group
// package's type.
type ResetPolicy = group.ResetPolicy

const (
	// ResetEarliest moves to the log start offset; a new group starts
	// there. The default.
	ResetEarliest = group.ResetEarliest
	// ResetLatest moves to the high watermark: only new records are read.
	ResetLatest = group.ResetLatest
	// ResetNone reports an *OffsetOutOfRangeError (ErrOffsetOutOfRange)
	// from a Consumer's Poll and leaves the position for the caller to
	// Seek; a GroupConsumer's Poll reports a partition without a committed
	// offset (ErrNoOffset) until it is Seeked.
	ResetNone = group.ResetNone
)

// ConsumerOptions configure a Consumer. A nil *ConsumerOptions, and every
// zero field, means the default stated on the field.
type ConsumerOptions struct {
	// Name identifies the consumer in Stats. Default "consumer-<n>".
	Name string
	// Reset is what to do with a position outside the partition's offsets.
	// Default ResetEarliest: go to the log start offset.
	Reset ResetPolicy
	// MaxPollRecords caps the records one Poll returns. Default
	// DefaultMaxPollRecords.
	MaxPollRecords int
	// FetchBytes caps the bytes of batches read from one partition at a
	// time. Default DefaultFetchBytes.
	FetchBytes int
	// ZeroCopy hands out records whose Key, Value and header values alias
	// the partition's segment mapping (or the read buffer, or a
	// decompression buffer) instead of copies. They, and the slice Poll
	// returns them in (which the next Poll reuses, so that reading
	// allocates nothing per record), are valid until the next Poll or
	// Close, and in a Records loop only until the loop body returns;
	// reading them later may return other bytes or fault. Copy what must
	// live longer. Default false: every record, and the slice, is the
	// caller's to keep.
	ZeroCopy bool
}

func (o *ConsumerOptions) withDefaults() ConsumerOptions {
	var c ConsumerOptions
	if o != nil {
		c = *o
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
	}
	if c.FetchBytes == 0 {
		c.FetchBytes = DefaultFetchBytes
	}
	return c
}

func (o *ConsumerOptions) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: ConsumerOptions.%s %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Reset > ResetNone:
		return bad("Reset", "%d is not a reset policy", o.Reset)
	case o.MaxPollRecords < 0:
		return bad("MaxPollRecords", "%d is negative", o.MaxPollRecords)
	case o.FetchBytes < 0:
		return bad("FetchBytes", "%d is negative", o.FetchBytes)
	}
	return nil
}

// Offset says where a consumer starts in a partition. The zero value is
// AtEarliest.
type Offset struct {
	kind offsetKind
	at   int64 // the offset, or Unix milliseconds for kindTime
}

type offsetKind uint8

const (
	kindEarliest offsetKind = iota
	kindExact
	kindLatest
	kindTime
)

// AtOffset starts at offset o. A position outside the partition's offsets
// is handled by the consumer's ResetPolicy when it is read.
func AtOffset(o int64) Offset { return Offset{kind: kindExact, at: o} }

// AtEarliest starts at the partition's log start offset.
func AtEarliest() Offset { return Offset{kind: kindEarliest} }

// AtLatest starts at the partition's high watermark: only records produced
// from now on are read.
func AtLatest() Offset { return Offset{kind: kindLatest} }

// AtTime starts at the first batch holding a record with a timestamp at or
// after t, or at the high watermark if there is none (Kafka's ListOffsets
// by timestamp). Records of that batch before t are delivered too.
func AtTime(t time.Time) Offset { return Offset{kind: kindTime, at: t.UnixMilli()} }

func (o Offset) String() string {
	switch o.kind {
	case kindEarliest:
		return "earliest"
	case kindLatest:
		return "latest"
	case kindTime:
		return "time " + time.UnixMilli(o.at).UTC().Format(time.RFC3339Nano)
	}
	return "offset " + strconv.FormatInt(o.at, 10)
}

// TopicPartition names a partition; it prints as "<topic>-<partition>".
// It is the group package's type, so a GroupConsumer's partitions, its
// commits and a group's lag use it too.
type TopicPartition = group.TopicPartition

// Assignment is a partition for a consumer to read and where to start.
type Assignment struct {
	Topic     string
	Partition int32
	Start     Offset
}

// Consumer reads records from partitions assigned to it, without a consumer
// group: whoever drives it (the application, or a group member that
// received an assignment) says which partitions and from where, and reads
// the positions back to commit them. Its methods are safe for concurrent
// use; Poll calls are serialized.
type Consumer struct {
	b    *Broker
	opts ConsumerOptions
	name string

	// assignMu guards assigned, order, rr, changes and changed.
	assignMu sync.Mutex
	assigned map[TopicPartition]*assignedPart
	order    []*assignedPart
	rr       int
	// changes counts changes of the assignment or a position from outside
	// Poll. changed, made only when a Poll is about to wait (so that a Seek
	// with no Poll waiting costs no allocation), is cancelled and dropped
	// at the next change, to wake that Poll; a context rather than a
	// channel so that a wait can chain it with context.AfterFunc instead
	// of a goroutine.
	changes       uint64
	changed       context.Context
	signalChanged context.CancelFunc

	// pollMu serializes Poll and guards held, deferred and parts.
	pollMu   sync.Mutex
	held     heldViews
	deferred deferredErr
	parts    []pollPart      // Poll's, reused
	zcRecs   []Record        // the slice a ZeroCopy Poll returns, reused by the next
	curs     []*assignedPart // the partitions holding a curBatch
	// keptBytes is the memory the kept batches hold of their own
	// (Sendfile buffers, decompression buffers), at most keptBytesMax.
	keptBytes int

	closed atomic.Bool
}

// assignedPart is one assigned partition and the consumer's position in it.
type assignedPart struct {
	tp  TopicPartition
	p   *brokerPart
	pos int64  // guarded by Consumer.assignMu
	gen uint64 // bumped by every Seek or Assign; guarded by Consumer.assignMu
	// reported is 1 + the position at which Poll returned a damaged
	// range (*log.DamagedRangeError), 0 for none: the next Poll from
	// there passes over it. Only Poll (under pollMu) touches it.
	reported int64
	// recBytes is the bytes per record of the partition's last read, 0
	// before the first: Poll reads about what MaxPollRecords will take
	// rather than FetchBytes, whose batch headers it would walk for
	// nothing. Only Poll (under pollMu) touches it.
	recBytes int
	// epoch is the leader epoch of the batch of the last record Poll took,
	// valid while the position's generation is epochGen (a Seek or Assign
	// makes it unknown), and checked the latest epoch of the log when its
	// lineage was last found to reach the position: the log truncated
	// below the position is told (*TruncatedError), not read on from
	// (KIP-320). Only Poll (under pollMu) touches them.
	epoch, checked int32
	epochGen       uint64
	// cur is the batch the last Poll that read the partition stopped
	// inside; cur.v is nil for none. Only Poll (under pollMu) and Close
	// touch it. A value, not a pointer: a Poll that stops inside a batch
	// (every point read) allocates nothing for it.
	cur curBatch
}

// curBatch is a batch a Poll stopped inside, MaxPollRecords reached: the
// view holding it and its iterator at the next record, the batch's CRC
// checked once, when Poll first parsed it. The next Poll from there takes
// the batch's records from it instead of reading the batch and checking
// its CRC again, as a Kafka consumer drains a fetched batch over many
// polls: without it, a batch of thousands of small records would be read
// and checked once per MaxPollRecords of its records.
//
// It is used only while nothing could have changed the bytes or what the
// position means: the same position and generation (no Seek, Assign or
// rewind since), the log neither truncated (which may write over the
// bytes it cut), closed nor deleted, and the position not below the log
// start (retention and DeleteRecords are told as before, by the read).
type curBatch struct {
	v      *readpath.View
	it     record.RecordIter
	bt     record.Batch
	gen    uint64 // the position's generation when it was read
	next   int64  // the offset of the next record: the position it continues
	truncs int64  // the log's Truncations before the read
	cost   int    // the memory it holds of its own (Consumer.keptBytes)
}

// keptBytesMax is how much memory of their own (a Sendfile view's buffer,
// a decompression buffer) a consumer's kept batches may hold together, in
// FetchBytes: a view of a mapping costs none, and a batch over the cap is
// read again by the next Poll, as before batches were kept.
const keptBytesMax = 4

// heldViews are the read views and decompression buffers that zero-copy
// records alias, released at the next Poll.
type heldViews struct {
	views []*readpath.View
	iters []*record.RecordIter
}

func (h *heldViews) release() {
	for _, v := range h.views {
		v.Release()
	}
	for _, it := range h.iters {
		it.Close()
	}
	clear(h.views)
	clear(h.iters)
	h.views, h.iters = h.views[:0], h.iters[:0]
}

// NewConsumer returns a Consumer with no partitions assigned.
func (b *Broker) NewConsumer(opts *ConsumerOptions) (*Consumer, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if b.closed.Load() {
		return nil, ErrClosed
	}
	c := &Consumer{b: b, opts: o, assigned: map[TopicPartition]*assignedPart{}}
	b.clientsMu.Lock()
	defer b.clientsMu.Unlock()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	b.nextConsumer++
	c.name = o.Name
	if c.name == "" {
		c.name = "consumer-" + strconv.FormatInt(b.nextConsumer, 10)
	}
	b.consumers[c] = struct{}{}
	return c, nil
}

// Name returns the consumer's name.
func (c *Consumer) Name() string { return c.name }

// resolve turns a starting Offset into a position in p.
func (c *Consumer) resolve(p *brokerPart, o Offset) (int64, error) {
	switch o.kind {
	case kindEarliest:
		return p.LogStartOffset(), nil
	case kindLatest:
		return p.HighWatermark(), nil
	case kindTime:
		off, ok, err := p.OffsetForTime(time.UnixMilli(o.at))
		if err != nil {
			return 0, brokerErr(fmt.Errorf("folio: %w", err))
		}
		if !ok {
			return p.HighWatermark(), nil
		}
		return off, nil
	case kindExact:
		if o.at < 0 {
			return 0, fmt.Errorf("%w: %s: offset %d is negative", ErrOffsetOutOfRange, p, o.at)
		}
		return o.at, nil
	}
	return 0, fmt.Errorf("%w: unknown offset kind %d", ErrInvalidConfig, o.kind)
}

// Assign adds partitions to the consumer, or moves its position in ones it
// already has, each to its Start. Nothing changes if any of them names an
// unknown topic or partition.
func (c *Consumer) Assign(as ...Assignment) error {
	if c.closed.Load() {
		return ErrClosed
	}
	type res struct {
		tp  TopicPartition
		p   *brokerPart
		pos int64
	}
	out := make([]res, 0, len(as))
	for _, a := range as {
		p, err := c.b.lookup(a.Topic, a.Partition)
		if err != nil {
			return err
		}
		pos, err := c.resolve(p, a.Start)
		if err != nil {
			return err
		}
		out = append(out, res{TopicPartition{Topic: a.Topic, Partition: a.Partition}, p, pos})
	}
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	for _, r := range out {
		ap := c.assigned[r.tp]
		if ap == nil {
			ap = &assignedPart{tp: r.tp}
			c.assigned[r.tp] = ap
			c.order = append(c.order, ap)
		}
		ap.p, ap.pos = r.p, r.pos
		ap.gen++
	}
	c.signalLocked()
	return nil
}

// Unassign removes partitions from the consumer; ones it does not have are
// ignored.
func (c *Consumer) Unassign(tps ...TopicPartition) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	for _, tp := range tps {
		if _, ok := c.assigned[tp]; !ok {
			continue
		}
		delete(c.assigned, tp)
		for i, ap := range c.order {
			if ap.tp == tp {
				c.order = append(c.order[:i], c.order[i+1:]...)
				break
			}
		}
	}
	c.signalLocked()
	return nil
}

// Assignment returns the assigned partitions, sorted.
func (c *Consumer) Assignment() []TopicPartition {
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	out := make([]TopicPartition, 0, len(c.order))
	for _, ap := range c.order {
		out = append(out, ap.tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Seek moves the consumer's position in an assigned partition. A Poll in
// progress drops what it read of that partition before the Seek.
func (c *Consumer) Seek(topicName string, partition int32, to Offset) error {
	if c.closed.Load() {
		return ErrClosed
	}
	tp := TopicPartition{Topic: topicName, Partition: partition}
	c.assignMu.Lock()
	ap := c.assigned[tp]
	c.assignMu.Unlock()
	if ap == nil {
		return fmt.Errorf("%w: %s", ErrNotAssigned, tp)
	}
	pos, err := c.resolve(ap.p, to)
	if err != nil {
		return err
	}
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	if c.assigned[tp] != ap {
		return fmt.Errorf("%w: %s", ErrNotAssigned, tp)
	}
	ap.pos = pos
	ap.gen++
	c.signalLocked()
	return nil
}

// Position returns the offset of the next record the consumer will read
// from an assigned partition: what a group commits.
func (c *Consumer) Position(topicName string, partition int32) (int64, error) {
	tp := TopicPartition{Topic: topicName, Partition: partition}
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	ap := c.assigned[tp]
	if ap == nil {
		return 0, fmt.Errorf("%w: %s", ErrNotAssigned, tp)
	}
	return ap.pos, nil
}

// Lag returns how many offsets of an assigned partition are visible but not
// yet consumed: the high watermark minus the position (offset gaps left by
// compaction count too, as in Kafka).
func (c *Consumer) Lag(topicName string, partition int32) (int64, error) {
	tp := TopicPartition{Topic: topicName, Partition: partition}
	c.assignMu.Lock()
	ap := c.assigned[tp]
	var pos int64
	if ap != nil {
		pos = ap.pos
	}
	c.assignMu.Unlock()
	if ap == nil {
		return 0, fmt.Errorf("%w: %s", ErrNotAssigned, tp)
	}
	return max(ap.p.HighWatermark()-pos, 0), nil
}

func (c *Consumer) signalLocked() {
	c.changes++
	if c.signalChanged != nil {
		c.signalChanged()
		c.changed, c.signalChanged = nil, nil
	}
}

// waitChanged returns the context the next change cancels, or false if
// there were changes since the count changes was read (the caller reads
// again instead of waiting).
func (c *Consumer) waitChanged(changes uint64) (context.Context, bool) {
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	if c.changes != changes {
		return nil, false
	}
	if c.changed == nil {
		c.changed, c.signalChanged = context.WithCancel(context.Background())
	}
	return c.changed, true
}

// Close releases the consumer and the views it holds; a Poll in progress
// returns ErrClosed. Close is idempotent; later calls return ErrClosed.
func (c *Consumer) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	c.assignMu.Lock()
	c.signalLocked()
	c.assignMu.Unlock()
	c.pollMu.Lock()
	c.held.release()
	for len(c.curs) > 0 {
		c.dropCur(c.curs[0], false)
	}
	c.zcRecs = nil
	c.pollMu.Unlock()
	c.b.clientsMu.Lock()
	delete(c.b.consumers, c)
	c.b.clientsMu.Unlock()
	return nil
}

// pollPart is one partition's state within a Poll.
type pollPart struct {
	ap    *assignedPart
	pos   int64 // the position Poll advances
	gen   uint64
	moved bool // pos changed (records taken, control batches or gaps skipped, reset)
}

// Poll returns the next records from the assigned partitions, at most
// MaxPollRecords, blocking until there is at least one or ctx ends (ctx's
// error). It takes partitions in turn so that none starves. Records of one
// partition come in offset order; control batches are skipped, and so are
// offset gaps. A position outside a partition's offsets is reset by the
// ResetPolicy or reported as an *OffsetOutOfRangeError; a deleted topic's
// partition reports ErrUnknownTopic until unassigned.
//
// A damaged batch (an error matching ErrCorrupt) costs only itself: Poll
// returns the records before it, with those of the other partitions, and
// the next Poll returns the error; the partition's Position stays at the
// damaged batch (so committing it loses nothing) until a Seek moves past
// it. Every Poll after that reads the other partitions again and reports
// the error anew whenever it returns no records or, having returned some,
// at the Poll after: a damaged partition neither stops nor hides behind
// healthy ones. A damaged range the log has located (a broken batch,
// offsets missing between segments: an error wrapping a
// *log.DamagedRangeError that names the file, the byte position and the
// offsets) is reported so once, and the Poll after it passes over it to the
// next valid batch, as over a compaction gap. So is a batch whose framing
// holds but whose CRC fails: the log locates it (log.Log.LocateDamage), and
// where reading resumes never comes from the damaged bytes. Only a batch
// the log cannot locate (the file holds it valid) holds the position until
// a Seek. A Seek back to a passed-over range reports it again.
func (c *Consumer) Poll(ctx context.Context) ([]Record, error) {
	c.pollMu.Lock()
	defer c.pollMu.Unlock()
	c.held.release()
	for {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		c.assignMu.Lock()
		parts := slices.Grow(c.parts[:0], len(c.order))[:len(c.order)]
		c.parts = parts
		for i := range c.order {
			ap := c.order[(c.rr+i)%len(c.order)]
			parts[i] = pollPart{ap: ap, pos: ap.pos, gen: ap.gen}
		}
		if len(c.order) > 0 {
			c.rr = (c.rr + 1) % len(c.order)
		}
		// A kept batch of a partition unassigned, or sought, since is
		// dropped; fetch checks the rest.
		for i := 0; i < len(c.curs); {
			if ap := c.curs[i]; c.assigned[ap.tp] != ap || ap.gen != ap.cur.gen {
				c.dropCur(ap, false)
				continue
			}
			i++
		}
		changes := c.changes
		c.assignMu.Unlock()

		if err := c.takeDeferred(); err != nil {
			return nil, err
		}
		var recs []Record
		if c.opts.ZeroCopy {
			// The records are valid only until the next Poll, and so is
			// their slice: reusing it spares an allocation of up to
			// MaxPollRecords records per Poll, whose garbage kept the
			// collector (and its write barriers) running during a scan.
			recs = c.zcRecs[:0]
		}
		var ferr error
		var fpart *pollPart
		for i := range parts {
			if len(recs) >= c.opts.MaxPollRecords {
				break
			}
			var err error
			recs, err = c.fetch(&parts[i], recs)
			if err != nil && ferr == nil {
				// One partition's error (damage, a deleted topic) does not
				// hold back the others: they are still read.
				ferr, fpart = err, &parts[i]
			}
		}
		c.commit(parts)
		if c.opts.ZeroCopy {
			c.zcRecs = recs[:0]
		}
		if len(recs) > 0 {
			// An error after records is reported by the next Poll, before
			// it reads anything, so that it is neither lost nor, while other
			// partitions have records, postponed for ever; the Poll after
			// it meets the error again, unless a Seek moved past it.
			if ferr != nil {
				c.deferred = deferredErr{err: ferr, ap: fpart.ap, gen: fpart.gen, pos: fpart.pos}
			}
			return recs, nil
		}
		if ferr != nil {
			markReported(ferr, fpart.ap, fpart.pos)
			return nil, ferr
		}
		changed, ok := c.waitChanged(changes)
		if !ok {
			continue // assigned or sought meanwhile: read again
		}
		if err := c.wait(ctx, parts, changed); err != nil {
			return nil, err
		}
	}
}

// deferredErr is a partition's error met by a Poll that returned records
// of the partitions read before or after it.
type deferredErr struct {
	err error
	ap  *assignedPart
	gen uint64
	pos int64 // where the partition met it
}

// markReported notes that Poll returns err, met by ap at pos: a damaged
// range is reported once, with the position left at it, and the next Poll
// from there passes over it. Only Poll (under pollMu) calls it.
func markReported(err error, ap *assignedPart, pos int64) {
	var dr *log.DamagedRangeError
	if errors.As(err, &dr) {
		ap.reported = pos + 1
	}
}

// takeDeferred returns the error an earlier Poll deferred and forgets it;
// nil when there is none or the partition was sought, reassigned or
// unassigned since (the error may no longer hold).
func (c *Consumer) takeDeferred() error {
	d := c.deferred
	c.deferred = deferredErr{}
	if d.err == nil {
		return nil
	}
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	if d.ap.gen != d.gen || c.assigned[d.ap.tp] != d.ap {
		return nil
	}
	markReported(d.err, d.ap, d.pos)
	return d.err
}

// commit stores the positions Poll advanced, except for partitions that
// were sought or reassigned meanwhile.
func (c *Consumer) commit(parts []pollPart) {
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	for _, pp := range parts {
		if pp.moved && pp.ap.gen == pp.gen && c.assigned[pp.ap.tp] == pp.ap {
			pp.ap.pos = pp.pos
		}
	}
}

// fetch appends records of one partition from pp.pos to recs.
func (c *Consumer) fetch(pp *pollPart, recs []Record) ([]Record, error) {
	p := pp.ap.p
	if err := checkLineage(pp); err != nil {
		return recs, err
	}
	if pp.ap.cur.v != nil {
		var err error
		if recs, err = c.fromCur(pp, recs); err != nil || len(recs) >= c.opts.MaxPollRecords {
			return recs, err
		}
	}
	for resets := 0; ; resets++ {
		maxBytes := c.readBytes(pp.ap, c.opts.MaxPollRecords-len(recs))
		truncs := p.Log().Truncations()
		v, err := p.Read(pp.pos, maxBytes, log.BoundHighWatermark)
		if err == nil {
			pos0 := pp.pos
			var u viewUse
			recs, u, err = c.decode(pp, v, truncs, recs)
			if err == nil {
				if u.rest > 0 || maxBytes >= c.opts.FetchBytes ||
					len(recs) >= c.opts.MaxPollRecords || pp.pos == pos0 ||
					pp.pos >= p.HighWatermark() {
					// Done: MaxPollRecords reached, nothing read, or
					// nothing left below the high watermark. (Whether the
					// read ended at its size or at a segment's end is not
					// told, and a guess from the batch sizes seen missed
					// a batch larger than all before it; reading on past a
					// segment's end only returns more of what is there.)
					return recs, nil
				}
				// The read, cut by the estimate, ran out before
				// MaxPollRecords: read on from where it ended.
				resets = -1
				continue
			}
			// A damaged batch: handled below with Read's errors (a
			// located range is passed over once it was reported).
		}
		if errors.Is(err, log.ErrNoData) {
			return recs, nil
		}
		var dr *log.DamagedRangeError
		if errors.As(err, &dr) && pp.ap.reported == pp.pos+1 && dr.Resume > pp.pos {
			// The range was reported by the last Poll: pass over it, as
			// over a compaction gap.
			pp.ap.reported = 0
			pp.pos, pp.moved = dr.Resume, true
			continue
		}
		var oor *log.OffsetOutOfRangeError
		if errors.As(err, &oor) && resets == 0 {
			switch c.opts.Reset {
			case ResetEarliest:
				pp.pos, pp.moved = oor.Start, true
				continue
			case ResetLatest:
				pp.pos, pp.moved = p.HighWatermark(), true
				continue
			}
			return recs, &OffsetOutOfRangeError{Topic: p.Topic(), Partition: p.Index(), Offset: pp.pos, Start: oor.Start, End: oor.End}
		}
		if errors.Is(err, log.ErrClosed) {
			if p.Deleted() {
				return recs, fmt.Errorf("%w: %q was deleted", ErrUnknownTopic, p.Topic())
			}
			return recs, fmt.Errorf("%w: %s", ErrClosed, p)
		}
		if dr != nil || errors.Is(err, ErrCorrupt) {
			return recs, err // decode's, which names the partition
		}
		return recs, fmt.Errorf("folio: reading %s at %d: %w", p, pp.pos, err)
	}
}

// checkLineage fails with a *TruncatedError if the log, in the lineage of
// the leader epoch of the last record the consumer took, now ends below
// its position: an unclean leader election truncated what it had read
// (KIP-320's validation of the position after a change of leader). It
// looks only when the log's latest epoch moved since it last looked or
// the log ends below the position.
func checkLineage(pp *pollPart) error {
	ap := pp.ap
	if ap.epochGen != pp.gen || ap.epoch < 0 {
		return nil
	}
	l := ap.p.Log()
	latest := l.LatestEpoch()
	if latest == ap.checked && l.LogEndOffset() >= pp.pos {
		return nil
	}
	if _, end := l.EndOffsetForEpoch(ap.epoch); end >= 0 && end < pp.pos {
		return &TruncatedError{Topic: ap.p.Topic(), Partition: ap.p.Index(), Offset: pp.pos, Epoch: ap.epoch, End: end}
	}
	ap.checked = latest
	return nil
}

// readBytes is how many bytes of batches to read for want more records of
// ap: FetchBytes until a read has shown the partition's bytes per record,
// then want of them with half again and 16 KiB to spare (a read holds
// whole batches, and its first may start before the position), up to
// FetchBytes.
func (c *Consumer) readBytes(ap *assignedPart, want int) int {
	if ap.recBytes == 0 {
		return c.opts.FetchBytes
	}
	n := int64(want) * int64(ap.recBytes)
	return int(min(n+n/2+16<<10, int64(c.opts.FetchBytes)))
}

// viewUse is what decode made of a view: its size, the bytes it left
// unparsed (MaxPollRecords was reached before them) and its largest batch.
type viewUse struct{ size, rest, largest int }

// fromCur appends the records of the batch the last Poll stopped inside,
// if it is still good for pp's position (see curBatch), and drops it once
// it is drained or no longer good.
func (c *Consumer) fromCur(pp *pollPart, recs []Record) ([]Record, error) {
	ap, p := pp.ap, pp.ap.p
	cb, l := &ap.cur, p.Log()
	if cb.gen != pp.gen || cb.next != pp.pos || p.Deleted() || l.Closed() ||
		l.Truncations() != cb.truncs || pp.pos < l.LogStartOffset() {
		c.dropCur(ap, false) // no record of this Poll came from it
		return recs, nil
	}
	n0, pos0, moved0 := len(recs), pp.pos, pp.moved
	var full bool
	err := readpath.Guard(func() error {
		var arena []byte
		if !c.opts.ZeroCopy {
			arena = make([]byte, 0, min(len(cb.bt), arenaStart))
		}
		var err error
		recs, _, full, err = c.decodeRecords(&cb.it, p, pp, recs, arena)
		return err
	})
	if err != nil {
		recs, pp.pos, pp.moved = recs[:n0], pos0, moved0
		c.dropCur(ap, false)
		return recs, fmt.Errorf("folio: %s: %w", p, errs.Mark(err, ErrCorrupt))
	}
	p.Delivered(len(recs)-n0, 0) // its bytes were counted when it was read
	if full {
		cb.next = pp.pos
		return recs, nil
	}
	// Offsets after the last record (compaction gaps) belong to the batch.
	pp.pos, pp.moved = cb.bt.LastOffset()+1, true
	c.dropCur(ap, true)
	return recs, nil
}

// keepCur makes the batch bt of view v, which a Poll stopped inside at
// pp.pos with it at the next record, ap's curBatch, which then owns v and
// it; false, leaving them to the caller, when the memory they hold of
// their own would take the consumer's kept batches past keptBytesMax.
func (c *Consumer) keepCur(pp *pollPart, v *readpath.View, it *record.RecordIter, bt record.Batch, truncs int64) bool {
	if pp.ap.cur.v != nil {
		c.dropCur(pp.ap, true)
	}
	cost := v.Buffered() + it.Buffered()
	if cost > 0 && c.keptBytes+cost > keptBytesMax*c.opts.FetchBytes {
		return false
	}
	c.keptBytes += cost
	pp.ap.cur = curBatch{v: v, it: *it, bt: bt, gen: pp.gen, next: pp.pos, truncs: truncs, cost: cost}
	c.curs = append(c.curs, pp.ap)
	return true
}

// dropCur forgets ap's curBatch. With aliased (zero-copy records of the
// Poll under way may point into it) its view and iterator are released at
// the next Poll, else at once.
func (c *Consumer) dropCur(ap *assignedPart, aliased bool) {
	cb := ap.cur
	ap.cur = curBatch{}
	c.keptBytes -= cb.cost
	if i := slices.Index(c.curs, ap); i >= 0 {
		c.curs = slices.Delete(c.curs, i, i+1)
	}
	if aliased && c.opts.ZeroCopy {
		c.held.views = append(c.held.views, cb.v)
		if cb.bt.Codec() != record.CodecNone {
			// The records alias its decompression buffer.
			it := new(record.RecordIter)
			*it = cb.it
			c.held.iters = append(c.held.iters, it)
		}
		return
	}
	cb.v.Release()
	cb.it.Close()
}

// decode turns the batches of view v into records from pp.pos on. truncs
// is the log's Truncations read before the read that made v: a batch
// decode stops inside, MaxPollRecords reached, is kept for the next Poll
// (keepCur) with it.
func (c *Consumer) decode(pp *pollPart, v *readpath.View, truncs int64, recs []Record) (_ []Record, u viewUse, _ error) {
	p := pp.ap.p
	n0, bytesRead := len(recs), 0
	keep, kept := false, false
	err := readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		bytesRead = len(buf)
		var arena []byte
		if !c.opts.ZeroCopy {
			// Sized for what one poll takes, not the whole read (which may
			// hold far more records than MaxPollRecords); append grows it.
			arena = make([]byte, 0, min(len(buf), arenaStart))
		}
		for len(buf) > 0 && len(recs) < c.opts.MaxPollRecords {
			// A damaged batch costs only itself: the records of the batches
			// before it are returned, and the position stays at its start,
			// where the next Poll meets the damage again.
			nBatch, posBatch, movedBatch := len(recs), pp.pos, pp.moved
			bt, rest, err := record.Parse(buf)
			if err != nil {
				return c.damagedBatch(p, pp.pos, err)
			}
			buf = rest
			u.largest = max(u.largest, len(bt))
			if bt.LastOffset() < pp.pos {
				continue // the read starts with the batch holding pos
			}
			if bt.IsControl() {
				pp.pos, pp.moved = bt.LastOffset()+1, true
				continue
			}
			// Room for what this read holds, going by this batch's
			// records per byte, up to MaxPollRecords: a consumer that keeps
			// up reads a batch or two per Poll, and a slice sized for
			// MaxPollRecords allocated (and zeroed) 64 KiB per Poll, which
			// at tens of thousands of polls a second kept the garbage
			// collector running all the time.
			if len(recs) == cap(recs) {
				est := max(int64(bt.NumRecords())*int64(len(bt)+len(rest))/int64(len(bt)), 1)
				recs = slices.Grow(recs, int(min(est, int64(c.opts.MaxPollRecords-len(recs)))))
			}
			var full bool
			it := bt.Records(decodeOpts)
			recs, arena, full, err = c.decodeRecords(&it, p, pp, recs, arena)
			if err != nil {
				it.Close()
				recs, pp.pos, pp.moved = recs[:nBatch], posBatch, movedBatch
				return fmt.Errorf("folio: %s: %w", p, errs.Mark(err, ErrCorrupt))
			}
			switch {
			case full && c.keepCur(pp, v, &it, bt, truncs):
				// Kept, with the view, for the next Poll to go on from.
				kept = true
			case c.opts.ZeroCopy && bt.Codec() != record.CodecNone:
				// The records alias the decompression buffer: keep the
				// iterator open until the next Poll.
				hit := new(record.RecordIter)
				*hit = it
				c.held.iters = append(c.held.iters, hit)
			default:
				it.Close()
			}
			if !full {
				// Offsets after the last record (compaction gaps) belong
				// to this batch: move past them.
				pp.pos, pp.moved = bt.LastOffset()+1, true
			}
			if pp.moved {
				if e := bt.PartitionLeaderEpoch(); e != pp.ap.epoch || pp.ap.epochGen != pp.gen {
					pp.ap.epoch, pp.ap.checked, pp.ap.epochGen = e, e, pp.gen
				}
			}
			if full {
				break
			}
		}
		u.size, u.rest = bytesRead, len(buf)
		if n := len(recs) - n0; n > 0 {
			pp.ap.recBytes = (bytesRead - u.rest + n - 1) / n
		}
		return nil
	})
	switch {
	case kept:
		// The curBatch owns v.
	case c.opts.ZeroCopy && len(recs) > n0:
		c.held.views = append(c.held.views, v)
		keep = true
	}
	if !keep && !kept {
		v.Release()
	}
	if len(recs) > n0 || err == nil {
		p.Delivered(len(recs)-n0, bytesRead)
	}
	return recs, u, err
}

// damagedBatch is decode's error for a batch at or after pos that fails
// its checks (record.Parse's err): the log's *log.DamagedRangeError when
// it locates the damage in the file (the range, its file and bytes, and
// the next valid batch: fetch passes over it once it was reported, as
// over a range Read reports), else err, which holds the position at the
// batch until a Seek.
func (c *Consumer) damagedBatch(p *brokerPart, pos int64, err error) error {
	if lerr := p.Log().LocateDamage(pos); lerr != nil {
		var dr *log.DamagedRangeError
		if errors.As(lerr, &dr) && dr.Resume > pos {
			return fmt.Errorf("folio: reading %s at %d: %w", p, pos, lerr)
		}
		err = errors.Join(err, lerr)
	}
	return fmt.Errorf("folio: %s: %w", p, errs.Mark(err, ErrCorrupt))
}

// arenaStart is the first size of the buffer a poll copies record bytes
// into.
const arenaStart = 64 << 10

// decodeOpts skips the CRC check that record.Parse has just done.
var decodeOpts = &record.DecodeOptions{SkipCRC: true}

// decodeRecords appends the records of one batch from pp.pos on, copying
// their bytes to arena unless the consumer hands out views. full reports
// that MaxPollRecords stopped it before the batch's end.
func (c *Consumer) decodeRecords(it *record.RecordIter, p *brokerPart, pp *pollPart, recs []Record, arena []byte) ([]Record, []byte, bool, error) {
	topicName, index := p.Topic(), p.Index()
	// A read starting inside the batch (a Seek, a point read) passes the
	// records before pos without decoding them.
	it.SkipBefore(pp.pos)
	for {
		if len(recs) == c.opts.MaxPollRecords {
			// full when records are left: the iterator stays at the next
			// one, for the next Poll to go on from (curBatch).
			if it.Remaining() > 0 {
				return recs, arena, true, nil
			}
			it.Next() // at the end: checks that no bytes follow the last record
			return recs, arena, false, it.Err()
		}
		if !it.Next() {
			break
		}
		r := it.Record()
		if r.Offset() < pp.pos {
			continue
		}
		// Built in place: a Record is 128 bytes, and building it aside
		// and appending it copied it twice.
		recs = append(recs, Record{})
		rec := &recs[len(recs)-1]
		rec.Topic, rec.Partition, rec.Offset = topicName, index, r.Offset()
		rec.Timestamp = time.UnixMilli(r.Timestamp())
		if c.opts.ZeroCopy {
			rec.Key, rec.Value = r.Key(), r.Value()
		} else {
			rec.Key, arena = copyField(arena, r.Key())
			rec.Value, arena = copyField(arena, r.Value())
		}
		if n := r.NumHeaders(); n > 0 {
			rec.Headers = make([]Header, 0, n)
			for h := r.Headers(); h.Next(); {
				hv := h.Value()
				if !c.opts.ZeroCopy {
					hv, arena = copyField(arena, hv)
				}
				rec.Headers = append(rec.Headers, Header{Key: string(h.Key()), Value: hv})
			}
		}
		pp.pos, pp.moved = r.Offset()+1, true
	}
	return recs, arena, false, it.Err()
}

// copyField copies b to the arena, keeping nil (null) apart from empty.
func copyField(arena, b []byte) ([]byte, []byte) {
	if b == nil {
		return nil, arena
	}
	start := len(arena)
	arena = append(arena, b...)
	return arena[start:len(arena):len(arena)], arena
}

// wait blocks until one of parts has a record at its position, the
// assignment changes, or ctx ends. It does not poll and starts no
// goroutine: each partition's log closes the channel WaitChan gave for it
// when its high watermark passes the position.
func (c *Consumer) wait(ctx context.Context, parts []pollPart, changed context.Context) error {
	switch len(parts) {
	case 0:
		select {
		case <-ctx.Done():
		case <-changed.Done():
		}
	case 1:
		ready, cancel := parts[0].ap.p.WaitChan(parts[0].pos)
		defer cancel()
		select {
		case <-ready:
		case <-ctx.Done():
		case <-changed.Done():
		}
	default:
		cases := make([]reflect.SelectCase, 0, len(parts)+2)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(changed.Done())})
		for _, pp := range parts {
			ready, cancel := pp.ap.p.WaitChan(pp.pos)
			defer cancel()
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ready)})
		}
		reflect.Select(cases)
	}
	return c.waitResult(ctx, nil)
}

// waitResult turns the end of a wait into Poll's next step: nil to read
// again (data, a change, or a closed log, which the read reports), or the
// caller's ctx error.
func (c *Consumer) waitResult(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, log.ErrClosed) {
		return err
	}
	return nil
}

// Records iterates over the consumer's records, polling as needed, until
// the loop stops or an error (ctx's included) is yielded. Breaking out of
// the loop leaves the position right after the last record yielded.
func (c *Consumer) Records(ctx context.Context) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for {
			recs, err := c.Poll(ctx)
			if err != nil {
				yield(Record{}, err)
				return
			}
			for i, r := range recs {
				if !yield(r, nil) {
					c.rewind(recs[i+1:])
					return
				}
			}
		}
	}
}

// rewind moves positions back to the first of recs per partition: records
// a Poll returned that the caller did not take.
func (c *Consumer) rewind(recs []Record) {
	first := map[TopicPartition]int64{}
	for _, r := range recs {
		tp := TopicPartition{Topic: r.Topic, Partition: r.Partition}
		if _, ok := first[tp]; !ok {
			first[tp] = r.Offset
		}
	}
	c.assignMu.Lock()
	defer c.assignMu.Unlock()
	for tp, off := range first {
		if ap := c.assigned[tp]; ap != nil && ap.pos > off {
			ap.pos = off
		}
	}
}
