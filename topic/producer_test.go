package topic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
)

// hdr describes a batch header for the producer-state tests.
type hdr struct {
	offset  int64
	pid     int64
	epoch   int16
	seq     int32
	count   int32 // records; lastOffsetDelta is count-1
	ts      int64
	control bool
}

// batch encodes h as a 61-byte RecordBatch v2 header (Kafka's layout); the
// producer state reads headers only.
func (h hdr) batch() record.Batch {
	b := make([]byte, record.HeaderSize)
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(h.offset))
	be.PutUint32(b[8:], uint32(record.HeaderSize-record.LogOverhead))
	b[16] = record.Magic
	var attrs uint16
	if h.control {
		attrs |= 0x20
	}
	be.PutUint16(b[21:], attrs)
	be.PutUint32(b[23:], uint32(h.count-1))
	be.PutUint64(b[27:], uint64(h.ts))
	be.PutUint64(b[35:], uint64(h.ts))
	be.PutUint64(b[43:], uint64(h.pid))
	be.PutUint16(b[51:], uint16(h.epoch))
	be.PutUint32(b[53:], uint32(h.seq))
	be.PutUint32(b[57:], uint32(h.count))
	be.PutUint32(b[17:], record.Batch(b).ComputeCRC())
	return b
}

func TestHeaderHelper(t *testing.T) {
	b := hdr{offset: 40, pid: 7, epoch: 3, seq: 11, count: 4, ts: 1234, control: true}.batch()
	if _, err := record.CheckHeader(b); err != nil {
		t.Fatal(err)
	}
	if b.BaseOffset() != 40 || b.ProducerID() != 7 || b.ProducerEpoch() != 3 || b.BaseSequence() != 11 ||
		b.LastOffsetDelta() != 3 || b.LastOffset() != 43 || b.NumRecords() != 4 || b.MaxTimestamp() != 1234 || !b.IsControl() {
		t.Fatalf("header fields wrong: % x", []byte(b))
	}
}

func newState(t testing.TB, opts *ProducerStateOptions) *ProducerState {
	t.Helper()
	s, err := NewProducerState(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// appendTo checks b, and if it may be appended assigns it the next offsets
// and updates s, as a log's appender does.
func appendTo(t testing.TB, s *ProducerState, h hdr, next *int64) (*BatchMeta, error) {
	t.Helper()
	h.offset = *next
	b := h.batch()
	dup, err := s.Check(b)
	if err != nil || dup != nil {
		return dup, err
	}
	last := *next + int64(h.count) - 1
	if err := s.Update(b, *next, last); err != nil {
		t.Fatalf("Update: %v", err)
	}
	*next = last + 1
	return nil, nil
}

func mustAppend(t testing.TB, s *ProducerState, h hdr, next *int64) BatchMeta {
	t.Helper()
	first := *next
	dup, err := appendTo(t, s, h, next)
	if err != nil || dup != nil {
		t.Fatalf("append %+v: dup %v, err %v", h, dup, err)
	}
	return BatchMeta{FirstSeq: h.seq, LastSeq: lastSequence(h.seq, h.count-1), FirstOffset: first, LastOffset: *next - 1, MaxTimestamp: h.ts}
}

func TestProducerStateSequences(t *testing.T) {
	s := newState(t, nil)
	var next int64
	var metas []BatchMeta
	seq := int32(0)
	for i := 0; i < 8; i++ {
		n := int32(1 + i%3)
		metas = append(metas, mustAppend(t, s, hdr{pid: 1, epoch: 0, seq: seq, count: n, ts: int64(i)}, &next))
		seq += n
		// Batches of other producers and without a producer interleave.
		mustAppend(t, s, hdr{pid: -1, count: 2}, &next)
	}
	// A retry of any of the last five batches returns its original offsets.
	for _, m := range metas[3:] {
		dup, err := s.Check(hdr{pid: 1, epoch: 0, seq: m.FirstSeq, count: m.LastSeq - m.FirstSeq + 1}.batch())
		if err != nil || dup == nil || *dup != m {
			t.Fatalf("retry of %+v: dup %+v, err %v", m, dup, err)
		}
	}
	// Older ones were written, but their offsets are forgotten.
	for _, m := range metas[:3] {
		_, err := s.Check(hdr{pid: 1, epoch: 0, seq: m.FirstSeq, count: m.LastSeq - m.FirstSeq + 1}.batch())
		if !errors.Is(err, ErrDuplicateSequence) {
			t.Fatalf("retry of forgotten %+v: %v, want ErrDuplicateSequence", m, err)
		}
	}
	for _, tc := range []struct {
		name       string
		seq, count int32
	}{
		{"gap", seq + 1, 1},
		{"far gap", seq + 1000, 1},
		{"overlaps the last batch", seq - 1, 2},
		{"splits a retained batch", metas[7].FirstSeq, 1},
		{"straddles retained and forgotten", metas[2].FirstSeq, metas[3].LastSeq - metas[2].FirstSeq + 1},
		{"behind the first sequence", math.MaxInt32, 1},
	} {
		if _, err := s.Check(hdr{pid: 1, epoch: 0, seq: tc.seq, count: tc.count}.batch()); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Errorf("%s (seq %d count %d): %v, want ErrOutOfOrderSequence", tc.name, tc.seq, tc.count, err)
		}
	}
	// Nothing refused changed the state.
	info, _ := s.Producer(1)
	if info.LastSeq() != seq-1 || len(info.Batches) != RetainedBatches || info.Batches[4] != metas[7] {
		t.Fatalf("state after refusals: %+v", info)
	}
	mustAppend(t, s, hdr{pid: 1, epoch: 0, seq: seq, count: 1}, &next)
}

func TestProducerStateEpochs(t *testing.T) {
	s := newState(t, nil)
	var next int64
	old := mustAppend(t, s, hdr{pid: 5, epoch: 2, seq: 0, count: 3}, &next)
	mustAppend(t, s, hdr{pid: 5, epoch: 2, seq: 3, count: 1}, &next)

	// A stale epoch is fenced, a retry of a batch included.
	for _, h := range []hdr{{pid: 5, epoch: 1, seq: 4, count: 1}, {pid: 5, epoch: 1, seq: 0, count: 3}, {pid: 5, epoch: 0, seq: 0, count: 1}} {
		if _, err := s.Check(h.batch()); !errors.Is(err, ErrProducerFenced) {
			t.Fatalf("%+v: %v, want ErrProducerFenced", h, err)
		}
	}
	// A new epoch must start at 0.
	if _, err := s.Check(hdr{pid: 5, epoch: 3, seq: 4, count: 1}.batch()); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at seq 4: %v", err)
	}
	mustAppend(t, s, hdr{pid: 5, epoch: 3, seq: 0, count: 2}, &next)
	info, _ := s.Producer(5)
	if info.Epoch != 3 || len(info.Batches) != 1 || info.LastSeq() != 1 {
		t.Fatalf("after epoch bump: %+v", info)
	}
	// The old epoch's batches are forgotten: their retry is now fenced.
	if _, err := s.Check(hdr{pid: 5, epoch: 2, seq: old.FirstSeq, count: 3}.batch()); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("retry from the old epoch: %v", err)
	}
	// The epoch may jump by more than one.
	mustAppend(t, s, hdr{pid: 5, epoch: math.MaxInt16, seq: 0, count: 1}, &next)
}

func TestProducerStateControlBatches(t *testing.T) {
	s := newState(t, nil)
	var next int64
	mustAppend(t, s, hdr{pid: 9, epoch: 4, seq: 0, count: 2}, &next)
	// A marker of a stale epoch is fenced; of the current one, accepted.
	if _, err := s.Check(hdr{pid: 9, epoch: 3, count: 1, control: true}.batch()); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("stale marker: %v", err)
	}
	mustAppend(t, s, hdr{pid: 9, epoch: 4, seq: -1, count: 1, control: true}, &next)
	info, _ := s.Producer(9)
	if info.Epoch != 4 || info.LastSeq() != 1 {
		t.Fatalf("marker of the current epoch changed sequences: %+v", info)
	}
	// A marker with a newer epoch moves the producer to it and clears its
	// batches: data must then start at 0.
	mustAppend(t, s, hdr{pid: 9, epoch: 5, seq: -1, count: 1, control: true, ts: 77}, &next)
	info, _ = s.Producer(9)
	if info.Epoch != 5 || len(info.Batches) != 0 || info.LastSeq() != -1 || info.LastTimestamp != 77 {
		t.Fatalf("after a newer marker: %+v", info)
	}
	if _, err := s.Check(hdr{pid: 9, epoch: 5, seq: 2, count: 1}.batch()); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("seq 2 after marker: %v", err)
	}
	mustAppend(t, s, hdr{pid: 9, epoch: 5, seq: 0, count: 1}, &next)
}

func TestProducerStateWraparound(t *testing.T) {
	s := newState(t, nil)
	var next int64
	// An unknown producer is accepted at any sequence (Kafka since 2.5).
	a := mustAppend(t, s, hdr{pid: 1, epoch: 0, seq: math.MaxInt32 - 4, count: 3}, &next)
	// A batch that wraps: MaxInt32-1, MaxInt32, 0, 1.
	b := mustAppend(t, s, hdr{pid: 1, epoch: 0, seq: math.MaxInt32 - 1, count: 4}, &next)
	if b.LastSeq != 1 {
		t.Fatalf("wrapped batch last seq %d, want 1", b.LastSeq)
	}
	c := mustAppend(t, s, hdr{pid: 1, epoch: 0, seq: 2, count: 1}, &next)
	for _, m := range []BatchMeta{a, b, c} {
		dup, err := s.Check(hdr{pid: 1, epoch: 0, seq: m.FirstSeq, count: int32(m.LastOffset - m.FirstOffset + 1)}.batch())
		if err != nil || dup == nil || *dup != m {
			t.Fatalf("retry across the wrap of %+v: %v %v", m, dup, err)
		}
	}
	// A batch ending exactly at MaxInt32 is followed by 0.
	s2 := newState(t, nil)
	mustAppend(t, s2, hdr{pid: 2, epoch: 1, seq: math.MaxInt32 - 2, count: 3}, &next)
	if _, err := s2.Check(hdr{pid: 2, epoch: 1, seq: math.MaxInt32, count: 1}.batch()); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("repeat of MaxInt32: %v", err)
	}
	mustAppend(t, s2, hdr{pid: 2, epoch: 1, seq: 0, count: 1}, &next)
	// Forgotten batches before the wrap are still recognized as written.
	for i := int32(1); i <= 6; i++ {
		mustAppend(t, s2, hdr{pid: 2, epoch: 1, seq: i, count: 1}, &next)
	}
	if _, err := s2.Check(hdr{pid: 2, epoch: 1, seq: math.MaxInt32 - 2, count: 3}.batch()); !errors.Is(err, ErrDuplicateSequence) {
		t.Fatalf("forgotten batch before the wrap: %v", err)
	}
	for _, tc := range []struct{ first, last int32 }{{0, 0}, {MaxInt32(), MaxInt32()}, {5, 5}} {
		if got := lastSequence(tc.first, 0); got != tc.last {
			t.Errorf("lastSequence(%d, 0) = %d", tc.first, got)
		}
	}
	if !inSequence(math.MaxInt32, 0) || inSequence(math.MaxInt32, 1) || !inSequence(-1, 0) || inSequence(0, 0) {
		t.Error("inSequence")
	}
}

// MaxInt32 spares the table above a conversion.
func MaxInt32() int32 { return math.MaxInt32 }

func TestProducerStateUnknownProducers(t *testing.T) {
	lenient := newState(t, nil)
	if dup, err := lenient.Check(hdr{pid: 3, epoch: 0, seq: 57, count: 1}.batch()); dup != nil || err != nil {
		t.Fatalf("lenient, unknown producer at 57: %v %v", dup, err)
	}
	strict := newState(t, &ProducerStateOptions{RejectUnknownProducers: true})
	if _, err := strict.Check(hdr{pid: 3, epoch: 0, seq: 57, count: 1}.batch()); !errors.Is(err, ErrUnknownProducerID) {
		t.Fatalf("strict, unknown producer at 57: %v", err)
	}
	var next int64
	mustAppend(t, strict, hdr{pid: 3, epoch: 0, seq: 0, count: 1}, &next)
	mustAppend(t, strict, hdr{pid: 3, epoch: 0, seq: 1, count: 1}, &next)
	// Expired, the producer is unknown again.
	if n := strict.RemoveExpired(time.UnixMilli(0).Add(DefaultProducerExpiration)); n != 1 || strict.Len() != 0 {
		t.Fatalf("RemoveExpired removed %d, %d left", n, strict.Len())
	}
	if _, err := strict.Check(hdr{pid: 3, epoch: 0, seq: 2, count: 1}.batch()); !errors.Is(err, ErrUnknownProducerID) {
		t.Fatalf("strict, expired producer: %v", err)
	}
}

func TestProducerStateExpiry(t *testing.T) {
	s := newState(t, &ProducerStateOptions{Expiration: time.Hour})
	var next int64
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mustAppend(t, s, hdr{pid: 1, seq: 0, count: 1, ts: base.UnixMilli()}, &next)
	mustAppend(t, s, hdr{pid: 2, seq: 0, count: 1, ts: base.Add(30 * time.Minute).UnixMilli()}, &next)
	mustAppend(t, s, hdr{pid: 3, seq: 0, count: 1, ts: math.MinInt64}, &next)
	if n := s.RemoveExpired(base.Add(59 * time.Minute)); n != 1 {
		t.Fatalf("removed %d at +59m, want only the producer with a MinInt64 timestamp", n)
	}
	if n := s.RemoveExpired(base.Add(time.Hour)); n != 1 {
		t.Fatalf("removed %d at +1h", n)
	}
	if _, ok := s.Producer(2); !ok || s.Len() != 1 {
		t.Fatal("producer 2 expired early")
	}
	never := newState(t, &ProducerStateOptions{Expiration: Unlimited})
	mustAppend(t, never, hdr{pid: 1, seq: 0, count: 1}, &next)
	if n := never.RemoveExpired(base.Add(1000 * time.Hour)); n != 0 {
		t.Fatalf("Unlimited expiration removed %d", n)
	}
	if _, err := NewProducerState(&ProducerStateOptions{Expiration: -time.Second}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("negative expiration: %v", err)
	}
}

func TestProducerStateInvalidBatches(t *testing.T) {
	s := newState(t, nil)
	for _, tc := range []struct {
		name string
		b    record.Batch
	}{
		{"short", hdr{pid: 1, count: 1}.batch()[:60]},
		{"empty", nil},
		{"negative sequence", hdr{pid: 1, seq: -1, count: 1}.batch()},
		{"negative epoch", hdr{pid: 1, epoch: -1, count: 1}.batch()},
		{"negative delta", hdr{pid: 1, count: 0}.batch()},
	} {
		if _, err := s.Check(tc.b); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("Check(%s) = %v", tc.name, err)
		}
		if err := s.Update(tc.b, 0, 0); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("Update(%s) = %v", tc.name, err)
		}
	}
	b := hdr{pid: 1, seq: 0, count: 3}.batch()
	for _, offs := range [][2]int64{{0, 0}, {0, 3}, {5, 4}, {-1, 1}} {
		if err := s.Update(b, offs[0], offs[1]); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("Update with offsets %v: %v", offs, err)
		}
	}
	if s.Len() != 0 {
		t.Fatal("refused updates created state")
	}
	// Batches without a producer id pass and leave no state.
	for _, pid := range []int64{-1, -2, math.MinInt64} {
		nb := hdr{pid: pid, seq: -1, epoch: -1, count: 1}.batch()
		if dup, err := s.Check(nb); dup != nil || err != nil {
			t.Errorf("pid %d: %v %v", pid, dup, err)
		}
		if err := s.Update(nb, 0, 0); err != nil {
			t.Errorf("Update pid %d: %v", pid, err)
		}
	}
	if s.Len() != 0 {
		t.Fatal("batches without producer id made state")
	}
	if _, err := s.Check(hdr{pid: 1, seq: 0, count: 1}.batch()); err != nil {
		t.Fatal(err)
	}
}

// The model: Kafka's rules over unbounded ("absolute") sequences, keeping
// every batch of the current epoch, written independently of the
// implementation's ring arithmetic and five-batch window.
type modelProducer struct {
	epoch   int16
	batches []modelBatch // all batches of the epoch, in order
}

type modelBatch struct {
	absFirst, absLast int64
	meta              BatchMeta
}

type outcome struct {
	kind string // ok, dup, dupseq, ooo, fenced
	dup  BatchMeta
}

func modelCheck(m map[int64]*modelProducer, pid int64, epoch int16, absFirst, absLast int64) outcome {
	p := m[pid]
	if p == nil {
		return outcome{kind: "ok"}
	}
	if epoch == p.epoch {
		start := max(0, len(p.batches)-RetainedBatches)
		for _, b := range p.batches[start:] {
			if b.meta.FirstSeq == int32(absFirst%seqSpace) && b.meta.LastSeq == int32(absLast%seqSpace) {
				return outcome{kind: "dup", dup: b.meta}
			}
		}
	}
	switch {
	case epoch < p.epoch:
		return outcome{kind: "fenced"}
	case epoch > p.epoch:
		if absFirst%seqSpace != 0 {
			return outcome{kind: "ooo"}
		}
		return outcome{kind: "ok"}
	}
	if len(p.batches) == 0 {
		if absFirst%seqSpace == 0 {
			return outcome{kind: "ok"}
		}
		return outcome{kind: "ooo"}
	}
	lastAbs := p.batches[len(p.batches)-1].absLast
	if absFirst == lastAbs+1 {
		return outcome{kind: "ok"}
	}
	retainedFirst := p.batches[max(0, len(p.batches)-RetainedBatches)].absFirst
	if absFirst >= p.batches[0].absFirst && absLast < retainedFirst {
		return outcome{kind: "dupseq"}
	}
	return outcome{kind: "ooo"}
}

func outcomeOf(dup *BatchMeta, err error) outcome {
	switch {
	case err == nil && dup == nil:
		return outcome{kind: "ok"}
	case err == nil:
		return outcome{kind: "dup", dup: *dup}
	case errors.Is(err, ErrDuplicateSequence):
		return outcome{kind: "dupseq"}
	case errors.Is(err, ErrOutOfOrderSequence):
		return outcome{kind: "ooo"}
	case errors.Is(err, ErrProducerFenced):
		return outcome{kind: "fenced"}
	}
	return outcome{kind: "error: " + err.Error()}
}

// client is one simulated producer: it knows its epoch, its next absolute
// sequence and the batches it sent in this epoch.
type client struct {
	pid   int64
	epoch int16
	next  int64
	sent  []modelBatch
}

// TestProducerStateModel runs random producers (in-order sends, retries of
// recent and old batches, gaps, epoch bumps, zombies, markers, sequences
// that wrap) against both the implementation and the model, then checks
// that Rebuild from the log, and snapshot plus Replay, reproduce the state.
func TestProducerStateModel(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 4))
	seen := map[string]int{}
	for round := 0; round < 30; round++ {
		runModel(t, r, 1500, seen)
	}
	t.Logf("outcomes: %v", seen)
	// The workload must reach every outcome, or the test proves little.
	for _, kind := range []string{"ok", "dup", "dupseq", "ooo", "fenced"} {
		if seen[kind] < 20 {
			t.Errorf("outcome %s seen %d times", kind, seen[kind])
		}
	}
}

func runModel(t *testing.T, r *rand.Rand, steps int, seen map[string]int) {
	s := newState(t, nil)
	model := map[int64]*modelProducer{}
	var log []record.Batch
	var next int64
	var snap []byte
	snapAt := 0
	clients := make([]*client, 1+r.IntN(4))
	for i := range clients {
		c := &client{pid: int64(i * 1000), epoch: int16(r.IntN(3))}
		if r.IntN(3) == 0 { // start close to the wrap: unknown producers may start anywhere
			c.next = seqSpace - int64(r.IntN(40))
		}
		clients[i] = c
	}
	for step := 0; step < steps; step++ {
		c := clients[r.IntN(len(clients))]
		h := hdr{pid: c.pid, epoch: c.epoch, ts: int64(step)}
		var absFirst, absLast int64
		newBatch := false
		switch op := r.IntN(20); {
		case op < 10 || len(c.sent) == 0: // the next batch
			h.count = 1 + r.Int32N(5)
			absFirst, newBatch = c.next, true
		case op < 14: // a retry of a recent or an older batch
			b := c.sent[len(c.sent)-1-r.IntN(min(len(c.sent), 9))]
			absFirst, h.count = b.absFirst, int32(b.absLast-b.absFirst+1)
		case op < 15: // a gap
			h.count = 1 + r.Int32N(3)
			absFirst = c.next + 1 + int64(r.IntN(100))
		case op < 16: // a new epoch, mostly starting at 0
			c.epoch += int16(1 + r.IntN(2))
			c.next, c.sent = 0, nil
			h.epoch, h.count = c.epoch, 1+r.Int32N(3)
			if r.IntN(4) == 0 {
				c.next = 1 + int64(r.IntN(10))
			}
			absFirst, newBatch = c.next, true
		case op < 17: // a zombie of an older epoch
			if c.epoch == 0 {
				continue
			}
			h.epoch, h.count = c.epoch-1-int16(r.IntN(int(c.epoch))), 1
			absFirst = c.next
		case op < 18: // a transaction marker, sometimes bumping the epoch
			h.control, h.seq, h.count = true, -1, 1
			if r.IntN(3) == 0 {
				c.epoch++
				c.next, c.sent = 0, nil
				h.epoch = c.epoch
			}
		default: // a batch without a producer
			h.pid, h.epoch, h.seq, h.count = -1, -1, -1, 1+r.Int32N(3)
		}
		if h.pid >= 0 && !h.control {
			h.seq = int32(absFirst % seqSpace)
			absLast = absFirst + int64(h.count) - 1
		}

		var want outcome
		switch {
		case h.pid < 0:
			want = outcome{kind: "ok"}
		case h.control:
			want = outcome{kind: "ok"}
			if p := model[h.pid]; p != nil && h.epoch < p.epoch {
				want = outcome{kind: "fenced"}
			}
		default:
			want = modelCheck(model, h.pid, h.epoch, absFirst, absLast)
		}
		first := next
		dup, err := appendTo(t, s, h, &next)
		got := outcomeOf(dup, err)
		seen[got.kind]++
		if got != want {
			t.Fatalf("step %d, %+v (abs %d..%d): got %+v (%v), model says %+v", step, h, absFirst, absLast, got, err, want)
		}
		if got.kind != "ok" {
			if newBatch {
				// A refused batch of the client's own epoch means the
				// partition's state and the client disagree; like a
				// client that resets, it starts over at 0.
				c.next, c.sent = 0, nil
			}
			continue
		}
		h.offset = first
		log = append(log, h.batch())
		if h.pid < 0 {
			continue
		}
		p := model[h.pid]
		if p == nil {
			p = &modelProducer{epoch: h.epoch}
			model[h.pid] = p
		}
		if p.epoch != h.epoch {
			*p = modelProducer{epoch: h.epoch}
		}
		if h.control {
			continue
		}
		mb := modelBatch{absFirst, absLast, BatchMeta{FirstSeq: h.seq, LastSeq: int32(absLast % seqSpace),
			FirstOffset: first, LastOffset: next - 1, MaxTimestamp: h.ts}}
		p.batches = append(p.batches, mb)
		if h.epoch == c.epoch {
			c.sent = append(c.sent, mb)
			c.next = absLast + 1
		}
		if snap == nil && step > steps/2 {
			snap, snapAt = s.MarshalSnapshot(next), len(log)
		}
	}

	// Rebuild from the whole log gives the same state, byte for byte.
	rebuilt := newState(t, nil)
	if err := rebuilt.Rebuild(batchesOf(log)); err != nil {
		t.Fatal(err)
	}
	live := s.MarshalSnapshot(next)
	if !bytes.Equal(rebuilt.MarshalSnapshot(next), live) {
		t.Fatalf("rebuilt state differs:\nlive    %+v\nrebuilt %+v", s.Producers(), rebuilt.Producers())
	}
	// So does the mid-run snapshot plus a replay of the batches after it.
	if snap != nil {
		resumed := newState(t, nil)
		end, err := resumed.LoadSnapshot(snap)
		if err != nil {
			t.Fatal(err)
		}
		if snapAt < len(log) && log[snapAt].BaseOffset() != end {
			t.Fatalf("snapshot end offset %d, next batch at %d", end, log[snapAt].BaseOffset())
		}
		if err := resumed.Replay(batchesOf(log[snapAt:])); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(resumed.MarshalSnapshot(next), live) {
			t.Fatalf("snapshot + replay differs:\nlive    %+v\nresumed %+v", s.Producers(), resumed.Producers())
		}
	}
}

func batchesOf(log []record.Batch) iter.Seq2[record.Batch, error] {
	return func(yield func(record.Batch, error) bool) {
		for _, b := range log {
			if !yield(b, nil) {
				return
			}
		}
	}
}

func TestRebuildErrorsLeaveState(t *testing.T) {
	s := newState(t, nil)
	var next int64
	mustAppend(t, s, hdr{pid: 1, seq: 0, count: 2}, &next)
	before := s.MarshalSnapshot(next)
	boom := errors.New("read failed")
	failing := func(yield func(record.Batch, error) bool) {
		if !yield(hdr{pid: 2, seq: 0, count: 1, offset: 10}.batch(), nil) {
			return
		}
		yield(nil, boom)
	}
	if err := s.Rebuild(failing); !errors.Is(err, boom) {
		t.Fatalf("Rebuild: %v", err)
	}
	if err := s.Replay(failing); !errors.Is(err, boom) {
		t.Fatalf("Replay: %v", err)
	}
	short := func(yield func(record.Batch, error) bool) { yield(record.Batch{1, 2, 3}, nil) }
	if err := s.Rebuild(short); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("Rebuild of a short header: %v", err)
	}
	if !bytes.Equal(s.MarshalSnapshot(next), before) {
		t.Fatal("failed rebuilds changed the state")
	}
	// Replay follows the log even where a client append would be refused:
	// the log is the truth (a lower epoch after a higher one, a gap).
	log := []record.Batch{
		hdr{offset: 0, pid: 4, epoch: 2, seq: 0, count: 1}.batch(),
		hdr{offset: 1, pid: 4, epoch: 1, seq: 9, count: 1}.batch(),
		hdr{offset: 2, pid: 4, epoch: 1, seq: 20, count: 2}.batch(),
	}
	if err := s.Rebuild(batchesOf(log)); err != nil {
		t.Fatal(err)
	}
	info, ok := s.Producer(4)
	if !ok || info.Epoch != 1 || len(info.Batches) != 2 || info.LastSeq() != 21 || info.Batches[1].FirstOffset != 2 {
		t.Fatalf("replayed %+v", info)
	}
	if _, ok := s.Producer(1); ok {
		t.Fatal("Rebuild kept a producer the log does not have")
	}
	// After a gap in the log, the unbroken range restarts, so the forgotten
	// sequences before the gap are out of order, not duplicates.
	for i := int32(22); i < 30; i++ {
		mustAppend(t, s, hdr{pid: 4, epoch: 1, seq: i, count: 1}, &next)
	}
	if _, err := s.Check(hdr{pid: 4, epoch: 1, seq: 9, count: 1}.batch()); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence before a replayed gap: %v", err)
	}
	if _, err := s.Check(hdr{pid: 4, epoch: 1, seq: 20, count: 2}.batch()); !errors.Is(err, ErrDuplicateSequence) {
		t.Fatalf("forgotten sequence after the gap: %v", err)
	}
}

func TestSnapshotCorruption(t *testing.T) {
	s := newState(t, nil)
	var next int64
	for pid := int64(0); pid < 3; pid++ {
		for i := int32(0); i < 7; i++ {
			mustAppend(t, s, hdr{pid: pid, epoch: 1, seq: i * 2, count: 2, ts: int64(i)}, &next)
		}
	}
	snap := s.MarshalSnapshot(next)
	empty := newState(t, nil).MarshalSnapshot(0)
	if len(empty) != snapshotHeaderSize+snapshotCRCSize {
		t.Fatalf("empty snapshot is %d bytes", len(empty))
	}
	target := newState(t, nil)
	var tn int64
	mustAppend(t, target, hdr{pid: 77, seq: 0, count: 1}, &tn)
	before := target.MarshalSnapshot(tn)
	// Every single-bit flip and every truncation is caught.
	for i := 0; i < len(snap)*8; i++ {
		bad := bytes.Clone(snap)
		bad[i/8] ^= 1 << (i % 8)
		if _, err := target.LoadSnapshot(bad); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("flip of bit %d: %v", i, err)
		}
	}
	for n := 0; n < len(snap); n++ {
		if _, err := target.LoadSnapshot(snap[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	if !bytes.Equal(target.MarshalSnapshot(tn), before) {
		t.Fatal("a refused snapshot changed the state")
	}
	// A checksum-valid snapshot of another version is refused as such.
	v2 := bytes.Clone(empty)
	binary.BigEndian.PutUint16(v2[4:], 2)
	binary.BigEndian.PutUint32(v2[len(v2)-4:], crcOf(v2[:len(v2)-4]))
	if _, err := target.LoadSnapshot(v2); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("version 2: %v", err)
	}
	end, err := target.LoadSnapshot(snap)
	if err != nil || end != next || !bytes.Equal(target.MarshalSnapshot(end), snap) {
		t.Fatalf("round trip: end %d, %v", end, err)
	}
}

// FuzzLoadSnapshot: no input panics, and an accepted snapshot re-encodes to
// the same bytes (the format has one encoding per state).
func FuzzLoadSnapshot(f *testing.F) {
	s, _ := NewProducerState(nil)
	var next int64
	f.Add(s.MarshalSnapshot(0))
	for i := int32(0); i < 8; i++ {
		h := hdr{pid: int64(i % 3), epoch: 1, seq: i, count: 1, offset: next}
		b := h.batch()
		_ = s.Update(b, next, next)
		next++
	}
	full := s.MarshalSnapshot(next)
	f.Add(full)
	f.Add(full[:len(full)-snapshotCRCSize])
	f.Add([]byte("FPSS"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSnapshot(t, data)
		// Also with a valid checksum appended, so mutations reach the
		// field checks behind it.
		fuzzSnapshot(t, binary.BigEndian.AppendUint32(bytes.Clone(data), crcOf(data)))
	})
}

func fuzzSnapshot(t *testing.T, data []byte) {
	s, _ := NewProducerState(nil)
	end, err := s.LoadSnapshot(data)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("untyped error %v", err)
		}
		return
	}
	if got := s.MarshalSnapshot(end); !bytes.Equal(got, data) {
		t.Fatalf("re-encoded snapshot differs")
	}
	// The loaded state is usable.
	for _, p := range s.Producers() {
		_, _ = s.Check(hdr{pid: p.ID, epoch: p.Epoch, seq: int32((int64(p.LastSeq()) + 1) % seqSpace), count: 1}.batch())
	}
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func BenchmarkProducerStateCheckUpdate(b *testing.B) {
	for _, producers := range []int{1, 1000} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			s, _ := NewProducerState(nil)
			batches := make([]record.Batch, producers)
			seqs := make([]int32, producers)
			for i := range batches {
				batches[i] = hdr{pid: int64(i), epoch: 0, count: 10}.batch()
			}
			var offset int64
			i := 0
			for b.Loop() {
				p := i % producers
				i++
				bt := batches[p]
				binary.BigEndian.PutUint32(bt[53:], uint32(seqs[p]))
				if dup, err := s.Check(bt); err != nil || dup != nil {
					b.Fatalf("Check: %v %v", dup, err)
				}
				if err := s.Update(bt, offset, offset+9); err != nil {
					b.Fatal(err)
				}
				offset += 10
				seqs[p] += 10
			}
		})
	}
}
