package log

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// copyBatches returns copies of the leader's batches from offset from to its
// log end, as a follower's fetch would carry them.
func copyBatches(t *testing.T, l *Log, from int64) []record.Batch {
	t.Helper()
	var out []record.Batch
	for pos := from; pos < l.LogEndOffset(); {
		v, err := l.ReadBounded(pos, 1<<20, BoundLogEnd)
		if err != nil {
			t.Fatal(err)
		}
		buf, _ := v.Bytes()
		for len(buf) > 0 {
			b := record.Batch(bytes.Clone(buf[:record.Batch(buf).Size()]))
			buf = buf[len(b):]
			if b.LastOffset() >= pos {
				out = append(out, b)
				pos = b.LastOffset() + 1
			}
		}
		v.Release()
	}
	return out
}

// TestAppendFollower: a follower copying a leader's batches keeps their
// offsets and leader epochs, rolls at the same base offsets (its segment
// files end up byte-identical), learns the epochs, and refuses batches not
// at its log end or with a lower epoch, writing nothing.
func TestAppendFollower(t *testing.T) {
	o := &Options{FlushPolicy: FlushSync, SegmentBytes: 500}
	leader := openT(t, nil, t.TempDir(), o, State{})
	for _, ep := range []int32{2, 5} {
		if err := leader.SetLeaderEpoch(ep); err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			if _, _, err := leader.Append(makeBatch(t, "l", int64(i), 1+i%3, 40, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	batches := copyBatches(t, leader, 0)
	fdir := t.TempDir()
	follower := openT(t, nil, fdir, o, State{})
	// In two fetches, the second starting where the first ended.
	half := len(batches) / 2
	for _, part := range [][]record.Batch{batches[:half], batches[half:]} {
		first, last, err := follower.AppendFollower(part...)
		if err != nil || first != part[0].BaseOffset() || last != part[len(part)-1].LastOffset() {
			t.Fatalf("follower append: %d..%d, %v", first, last, err)
		}
	}
	if follower.LogEndOffset() != leader.LogEndOffset() || follower.DurableEndOffset() != leader.LogEndOffset() {
		t.Fatalf("follower ends at %d (durable %d), leader at %d", follower.LogEndOffset(), follower.DurableEndOffset(), leader.LogEndOffset())
	}
	if got, want := follower.LeaderEpochs(), leader.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("follower epochs %v, leader's %v", got, want)
	}
	got := copyBatches(t, follower, 0)
	if len(got) != len(batches) {
		t.Fatalf("follower holds %d batches, leader %d", len(got), len(batches))
	}
	for i := range got {
		if !bytes.Equal(got[i], batches[i]) {
			t.Fatalf("batch %d differs (offset %d, epoch %d vs %d)", i, got[i].BaseOffset(), got[i].PartitionLeaderEpoch(), batches[i].PartitionLeaderEpoch())
		}
	}
	lbases, fbases := segBases(leader), segBases(follower)
	if !slices.Equal(lbases, fbases) || len(lbases) < 3 {
		t.Fatalf("segment bases: leader %v, follower %v", lbases, fbases)
	}
	for _, b := range fbases {
		lb, err1 := os.ReadFile(segment.LogPath(leader.Dir(), b))
		fb, err2 := os.ReadFile(segment.LogPath(fdir, b))
		if err1 != nil || err2 != nil || !bytes.Equal(lb, fb) {
			t.Fatalf("segment %d: files differ (%v, %v)", b, err1, err2)
		}
	}

	// Refusals write nothing.
	end := follower.LogEndOffset()
	again := batches[len(batches)-1]
	if _, _, err := follower.AppendFollower(again); !errors.Is(err, ErrNotAtLogEnd) {
		t.Fatalf("a batch below the log end: %v", err)
	}
	gap := bytes.Clone(again)
	record.Batch(gap).SetBaseOffset(end + 1)
	if _, _, err := follower.AppendFollower(gap); !errors.Is(err, ErrNotAtLogEnd) {
		t.Fatalf("a batch above the log end: %v", err)
	}
	old := bytes.Clone(again)
	record.Batch(old).SetBaseOffset(end)
	record.Batch(old).SetPartitionLeaderEpoch(3)
	if _, _, err := follower.AppendFollower(old); !errors.Is(err, ErrEpochRegressed) {
		t.Fatalf("a batch of an older epoch: %v", err)
	}
	torn := bytes.Clone(again)
	record.Batch(torn).SetBaseOffset(end)
	torn[len(torn)-1] ^= 0xff
	if _, _, err := follower.AppendFollower(torn); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("a batch failing its CRC: %v", err)
	}
	if follower.LogEndOffset() != end {
		t.Fatalf("refusals moved the log end to %d from %d", follower.LogEndOffset(), end)
	}
	// A new epoch from the leader joins the lineage at its base offset.
	next := bytes.Clone(again)
	record.Batch(next).SetBaseOffset(end)
	record.Batch(next).SetPartitionLeaderEpoch(9)
	if _, _, err := follower.AppendFollower(next); err != nil {
		t.Fatal(err)
	}
	if e, off := follower.EndOffsetForEpoch(5); e != 5 || off != end {
		t.Fatalf("epoch 5 ends at %d (%d), want %d", off, e, end)
	}
}

func segBases(l *Log) []int64 {
	var out []int64
	l.snap.Load().segs.Ascend(func(e *segEntry) bool {
		out = append(out, e.base)
		return true
	})
	return out
}
