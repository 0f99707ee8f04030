package topic

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/foliolog/folio/record"
)

// RetainedBatches is how many of a producer's latest batches a partition
// remembers, so that a retry of any of them gets its original offsets back
// (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN; a Kafka producer keeps
// at most 5 requests in flight per connection).
const RetainedBatches = 5

// DefaultProducerExpiration is how long a producer's state outlives its
// last batch's timestamp (Kafka's producer.id.expiration.ms).
const DefaultProducerExpiration = 24 * time.Hour

// seqSpace is the number of distinct sequence numbers: they run from 0 to
// math.MaxInt32 and then wrap to 0.
const seqSpace = int64(math.MaxInt32) + 1

// BatchMeta is what a partition remembers of one appended producer batch.
type BatchMeta struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	// MaxTimestamp is the batch's max timestamp (the append time under
	// LogAppendTime), in Unix milliseconds.
	MaxTimestamp int64
}

// ProducerInfo describes one producer's state in a partition.
type ProducerInfo struct {
	ID    int64
	Epoch int16
	// Batches are the retained batches of the current epoch, oldest first;
	// empty right after an epoch change made by a control batch.
	Batches []BatchMeta
	// LastTimestamp is the max timestamp of the producer's last batch, in
	// Unix milliseconds; expiry counts from it.
	LastTimestamp int64
}

// LastSeq is the last sequence the producer wrote in its current epoch, or
// -1 if it wrote none.
func (p ProducerInfo) LastSeq() int32 {
	if len(p.Batches) == 0 {
		return -1
	}
	return p.Batches[len(p.Batches)-1].LastSeq
}

// ProducerStateOptions configures a ProducerState. The zero value (and nil)
// behaves as a current Kafka broker does.
type ProducerStateOptions struct {
	// RejectUnknownProducers refuses, with ErrUnknownProducerID, a batch
	// from a producer the partition holds no state for unless it starts at
	// sequence 0. Default false: such a batch is accepted with any sequence,
	// as Kafka has done since 2.5 (KIP-360), because retention or
	// DeleteRecords may have removed every batch a live producer wrote.
	// Folio's in-process producers always start at 0, so a Broker that only
	// serves them can turn it on to catch lost state.
	RejectUnknownProducers bool
	// Expiration is how long after its last batch's timestamp a producer's
	// state may be dropped by RemoveExpired. Default
	// DefaultProducerExpiration; Unlimited keeps states forever.
	Expiration time.Duration
}

func (o *ProducerStateOptions) validate() error {
	if o.Expiration < 0 && o.Expiration != Unlimited {
		return fmt.Errorf("%w: ProducerStateOptions.Expiration %v, want a positive duration or Unlimited (-1)", ErrInvalidConfig, o.Expiration)
	}
	return nil
}

// ProducerState is one partition's idempotent-producer state: per producer
// id the current epoch and the last RetainedBatches batches with their
// sequences and offsets. The partition's appender calls Check before it
// appends a batch and Update after the append succeeds, both under its
// append lock (the state's own lock makes single calls safe, not the pair).
// It is rebuilt from the log at open with Rebuild, or from a snapshot
// (MarshalSnapshot, LoadSnapshot) plus Replay of the batches after it.
type ProducerState struct {
	rejectUnknown bool
	expiration    time.Duration

	producersMu sync.Mutex // guards producers
	producers   map[int64]*producerEntry
}

// producerEntry is one producer's state.
type producerEntry struct {
	epoch int16
	// batches holds the first n retained batches, oldest first.
	batches [RetainedBatches]BatchMeta
	n       int
	// lastTimestamp is the max timestamp of the last batch, data or control.
	lastTimestamp int64
	// The current epoch's batches appended here form one unbroken sequence
	// range of seqSpan numbers starting at seqStart (spans past seqSpace
	// are clamped: every number has then been used). It tells a retry of
	// an old, forgotten batch (ErrDuplicateSequence) from a gap.
	seqStart int32
	seqSpan  int64
}

func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return -1
	}
	return e.batches[e.n-1].LastSeq
}

func (e *producerEntry) find(first, last int32) (BatchMeta, bool) {
	for _, m := range e.batches[:e.n] {
		if m.FirstSeq == first && m.LastSeq == last {
			return m, true
		}
	}
	return BatchMeta{}, false
}

func (e *producerEntry) push(m BatchMeta) {
	if e.n == RetainedBatches {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = m
	e.n++
}

// forgotten reports whether the sequences first..first+count-1 were all
// appended in the current epoch before the oldest retained batch.
func (e *producerEntry) forgotten(first int32, count int64) bool {
	if e.n == 0 || e.seqSpan >= seqSpace {
		return false
	}
	pos := func(s int32) int64 { return ((int64(s)-int64(e.seqStart))%seqSpace + seqSpace) % seqSpace }
	return pos(first)+count <= pos(e.batches[0].FirstSeq)
}

func (e *producerEntry) info(id int64) ProducerInfo {
	return ProducerInfo{
		ID:            id,
		Epoch:         e.epoch,
		Batches:       append([]BatchMeta(nil), e.batches[:e.n]...),
		LastTimestamp: e.lastTimestamp,
	}
}

// NewProducerState returns an empty producer state; nil opts means defaults.
func NewProducerState(opts *ProducerStateOptions) (*ProducerState, error) {
	var o ProducerStateOptions
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Expiration == 0 {
		o.Expiration = DefaultProducerExpiration
	}
	return &ProducerState{
		rejectUnknown: o.RejectUnknownProducers,
		expiration:    o.Expiration,
		producers:     make(map[int64]*producerEntry),
	}, nil
}

// lastSequence is the sequence of a batch's last record: sequences wrap from
// math.MaxInt32 to 0 (Kafka's DefaultRecordBatch.incrementSequence).
func lastSequence(first, lastOffsetDelta int32) int32 {
	if first > math.MaxInt32-lastOffsetDelta {
		return lastOffsetDelta - (math.MaxInt32 - first) - 1
	}
	return first + lastOffsetDelta
}

// inSequence reports whether next directly follows last, wrapping at
// math.MaxInt32.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// producerFields checks the producer fields of a batch header and returns
// its producer id (negative: not an idempotent batch).
func producerFields(b record.Batch) (int64, error) {
	if len(b) < record.HeaderSize {
		return 0, fmt.Errorf("%w: %d bytes, a batch header needs %d", ErrInvalidBatch, len(b), record.HeaderSize)
	}
	pid := b.ProducerID()
	if pid < 0 {
		return pid, nil
	}
	if b.LastOffsetDelta() < 0 {
		return 0, fmt.Errorf("%w: producer %d: negative lastOffsetDelta %d at offset %d", ErrInvalidBatch, pid, b.LastOffsetDelta(), b.BaseOffset())
	}
	if b.ProducerEpoch() < 0 {
		return 0, fmt.Errorf("%w: producer %d: negative epoch %d at offset %d", ErrInvalidBatch, pid, b.ProducerEpoch(), b.BaseOffset())
	}
	if !b.IsControl() && b.BaseSequence() < 0 {
		return 0, fmt.Errorf("%w: producer %d: negative sequence %d at offset %d", ErrInvalidBatch, pid, b.BaseSequence(), b.BaseOffset())
	}
	return pid, nil
}

// Check decides whether the batch b (a header suffices) may be appended.
// It returns:
//   - (nil, nil): append it, then call Update;
//   - (dup, nil): b retries a retained batch; do not append it, answer with
//     dup's offsets (Kafka answers a duplicate this way);
//   - an error wrapping ErrOutOfOrderSequence, ErrDuplicateSequence,
//     ErrProducerFenced, ErrUnknownProducerID or ErrInvalidBatch.
//
// Batches without a producer id (negative) always pass. Control batches
// (transaction markers) are only checked for a stale epoch.
func (s *ProducerState) Check(b record.Batch) (*BatchMeta, error) {
	pid, err := producerFields(b)
	if err != nil || pid < 0 {
		return nil, err
	}
	epoch := b.ProducerEpoch()
	s.producersMu.Lock()
	defer s.producersMu.Unlock()
	e := s.producers[pid]
	if b.IsControl() {
		if e != nil && epoch < e.epoch {
			return nil, fmt.Errorf("%w: producer %d: marker epoch %d, current epoch %d", ErrProducerFenced, pid, epoch, e.epoch)
		}
		return nil, nil
	}
	first := b.BaseSequence()
	last := lastSequence(first, b.LastOffsetDelta())
	if e == nil {
		if s.rejectUnknown && first != 0 {
			return nil, fmt.Errorf("%w: producer %d epoch %d: first sequence %d, and the partition holds no state for it", ErrUnknownProducerID, pid, epoch, first)
		}
		return nil, nil
	}
	if epoch == e.epoch {
		if m, ok := e.find(first, last); ok {
			dup := m // m itself stays on the stack: most batches are not duplicates
			return &dup, nil
		}
	}
	switch {
	case epoch < e.epoch:
		return nil, fmt.Errorf("%w: producer %d: epoch %d, current epoch %d", ErrProducerFenced, pid, epoch, e.epoch)
	case epoch > e.epoch:
		if first != 0 {
			return nil, fmt.Errorf("%w: producer %d: new epoch %d starts at sequence %d, want 0", ErrOutOfOrderSequence, pid, epoch, first)
		}
		return nil, nil
	}
	if inSequence(e.lastSeq(), first) {
		return nil, nil
	}
	if e.forgotten(first, int64(b.LastOffsetDelta())+1) {
		return nil, fmt.Errorf("%w: producer %d epoch %d: sequences %d..%d were written before the %d retained batches (oldest starts at %d)",
			ErrDuplicateSequence, pid, epoch, first, last, e.n, e.batches[0].FirstSeq)
	}
	return nil, fmt.Errorf("%w: producer %d epoch %d: sequence %d, want %d", ErrOutOfOrderSequence, pid, epoch, first, int32((int64(e.lastSeq())+1)%seqSpace))
}

// Update records a batch that was appended at offsets firstOffset through
// lastOffset. It trusts that Check passed (it follows the batch as the log
// holds it) and only refuses a malformed header or offsets that do not
// span the batch's records.
func (s *ProducerState) Update(b record.Batch, firstOffset, lastOffset int64) error {
	pid, err := producerFields(b)
	if err != nil || pid < 0 {
		return err
	}
	if firstOffset < 0 || lastOffset-firstOffset != int64(b.LastOffsetDelta()) {
		return fmt.Errorf("%w: producer %d: offsets %d..%d for a batch of lastOffsetDelta %d", ErrInvalidBatch, pid, firstOffset, lastOffset, b.LastOffsetDelta())
	}
	s.producersMu.Lock()
	defer s.producersMu.Unlock()
	applyLocked(s.producers, pid, b, firstOffset, lastOffset)
	return nil
}

// applyLocked records batch b of producer pid in producers. A new epoch
// (higher or, replaying a log, lower) clears the retained batches, as
// Kafka's ProducerStateEntry.maybeUpdateProducerEpoch does.
func applyLocked(producers map[int64]*producerEntry, pid int64, b record.Batch, firstOffset, lastOffset int64) {
	e := producers[pid]
	if e == nil {
		e = &producerEntry{epoch: b.ProducerEpoch()}
		producers[pid] = e
	}
	if e.epoch != b.ProducerEpoch() {
		*e = producerEntry{epoch: b.ProducerEpoch()}
	}
	e.lastTimestamp = b.MaxTimestamp()
	if b.IsControl() {
		return
	}
	first := b.BaseSequence()
	count := int64(b.LastOffsetDelta()) + 1
	if e.seqSpan > 0 && e.n > 0 && inSequence(e.lastSeq(), first) {
		e.seqSpan = min(e.seqSpan+count, seqSpace)
	} else {
		e.seqStart, e.seqSpan = first, min(count, seqSpace)
	}
	e.push(BatchMeta{
		FirstSeq:     first,
		LastSeq:      lastSequence(first, b.LastOffsetDelta()),
		FirstOffset:  firstOffset,
		LastOffset:   lastOffset,
		MaxTimestamp: b.MaxTimestamp(),
	})
}

// Rebuild replaces the state with one replayed from batches, in offset
// order, as the log holds them (headers suffice; offsets are taken from
// each batch's base offset and last offset delta). Replaying the whole
// partition is exact. A tail is exact for every producer with a batch in
// it, and forgets producers whose batches all precede it; with
// RejectUnknownProducers off, a forgotten producer's next batch is accepted
// with any sequence, so a retry of its last batch would be appended twice.
// On error the state is unchanged.
//
// Like Kafka's log recovery, replay does not enforce sequences or epochs:
// the log is the truth.
func (s *ProducerState) Rebuild(batches iter.Seq2[record.Batch, error]) error {
	producers := make(map[int64]*producerEntry)
	if err := replay(producers, batches); err != nil {
		return err
	}
	s.producersMu.Lock()
	s.producers = producers
	s.producersMu.Unlock()
	return nil
}

// Replay applies batches on top of the current state, for the batches a log
// holds after a snapshot's end offset. On error the state is unchanged.
func (s *ProducerState) Replay(batches iter.Seq2[record.Batch, error]) error {
	s.producersMu.Lock()
	producers := cloneProducers(s.producers)
	s.producersMu.Unlock()
	if err := replay(producers, batches); err != nil {
		return err
	}
	s.producersMu.Lock()
	s.producers = producers
	s.producersMu.Unlock()
	return nil
}

// ReplayGap is what a Replay or Rebuild iterator yields as its error to say
// that the log lost the offsets [From, To) (a damaged range it reported)
// and that the batches go on after it. The producers seen so far may have
// had batches there that moved their sequences on, so replay forgets them
// all: their next batch is then treated as Kafka treats a producer whose
// batches are gone (accepted with any sequence, or ErrUnknownProducerID
// with RejectUnknownProducers, which a Kafka client answers by resetting
// its producer id), rather than refused as out of order for ever.
// Producers with batches after the gap are known again from those.
type ReplayGap struct {
	From, To int64
}

func (g *ReplayGap) Error() string {
	return fmt.Sprintf("topic: offsets %d to %d lost: producer state before them forgotten", g.From, g.To-1)
}

func replay(producers map[int64]*producerEntry, batches iter.Seq2[record.Batch, error]) error {
	i := 0
	for b, err := range batches {
		if _, ok := errors.AsType[*ReplayGap](err); ok {
			clear(producers)
			continue
		}
		if err != nil {
			return fmt.Errorf("topic: replaying producer state, batch %d: %w", i, err)
		}
		pid, err := producerFields(b)
		if err != nil {
			return fmt.Errorf("topic: replaying producer state, batch %d: %w", i, err)
		}
		if pid >= 0 {
			applyLocked(producers, pid, b, b.BaseOffset(), b.LastOffset())
		}
		i++
	}
	return nil
}

func cloneProducers(m map[int64]*producerEntry) map[int64]*producerEntry {
	c := make(map[int64]*producerEntry, len(m))
	for id, e := range m {
		cp := *e
		c[id] = &cp
	}
	return c
}

// Producer returns the state of producer id, if the partition holds one.
func (s *ProducerState) Producer(id int64) (ProducerInfo, bool) {
	s.producersMu.Lock()
	defer s.producersMu.Unlock()
	e, ok := s.producers[id]
	if !ok {
		return ProducerInfo{}, false
	}
	return e.info(id), true
}

// Producers returns every producer's state, by ascending id.
func (s *ProducerState) Producers() []ProducerInfo {
	s.producersMu.Lock()
	out := make([]ProducerInfo, 0, len(s.producers))
	for id, e := range s.producers {
		out = append(out, e.info(id))
	}
	s.producersMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Len returns the number of producers the partition holds state for.
func (s *ProducerState) Len() int {
	s.producersMu.Lock()
	defer s.producersMu.Unlock()
	return len(s.producers)
}

// RemoveExpired drops the state of producers whose last batch's timestamp
// is Expiration or more before now, and returns how many it dropped. The
// owner calls it periodically (Kafka: every 10 minutes). A dropped producer
// is unknown afterwards (see RejectUnknownProducers).
func (s *ProducerState) RemoveExpired(now time.Time) int {
	if s.expiration == Unlimited {
		return 0
	}
	// A producer's timestamps come from its clock and may be anything;
	// comparing against one cutoff cannot overflow as a difference can.
	cutoff := now.UnixMilli() - s.expiration.Milliseconds()
	s.producersMu.Lock()
	defer s.producersMu.Unlock()
	removed := 0
	for id, e := range s.producers {
		if e.lastTimestamp <= cutoff {
			delete(s.producers, id)
			removed++
		}
	}
	return removed
}
