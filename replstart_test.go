package folio

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
)

// TestReplicationFollowerBelowLeaderStart: broker 2 copies a prefix of
// broker 1's log and stops; broker 1 appends on, drops broker 2 from the
// ISR (lag time passed on its clock), and deletes its records below an
// offset past broker 2's log end. Following again, broker 2's fetch is
// OFFSET_OUT_OF_RANGE; it restarts its log at the leader's log start
// (Kafka's truncateFullyAndStartAt) and catches up, and the high watermark
// reaches the leader's end on both.
func TestReplicationFollowerBelowLeaderStart(t *testing.T) {
	cfg := topic.Config{Flush: log.FlushNone, SegmentBytes: 16 << 10}
	meta := rnMeta(t, 1, 2)
	b1, b2 := startRNBroker(t, 1, cfg), startRNBroker(t, 2, cfg)
	var clock atomic.Int64
	clock.Store(time.Unix(1700000000, 0).UnixNano())
	ld, err := replica.NewLeader(context.Background(), meta, rnTP, 1, b1.p, &replica.LeaderOptions{
		MinInsyncReplicas: 1, LagTime: time.Second, Now: func() time.Time { return time.Unix(0, clock.Load()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	b1.hook.SetLeader(ld)
	ack1 := replica.WithAcks(context.Background(), replica.AckLeader)
	appendN := func(tag string, n int) {
		for i := range n {
			if _, err := b1.p.AppendBatch(ack1, rnBatch(t, fmt.Sprint(tag, i), 4, 500)); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN("prefix", 5)
	f := b2.follower(t, meta, b1, b2)
	rnWaitEnd(t, b2.p, b1.p.LogEndOffset())
	f.Close()
	prefixEnd := b2.p.LogEndOffset()

	appendN("more", 60)
	clock.Add(int64(time.Minute))
	if err := ld.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := ld.State(); len(st.ISR) != 1 {
		t.Fatalf("ISR %v after the lag time, want the leader alone", st.ISR)
	}
	end := b1.p.LogEndOffset()
	rnWaitHW(t, b1.p, end)
	if err := b1.p.DeleteRecordsBefore(end - 20); err != nil {
		t.Fatal(err)
	}
	start := b1.p.LogStartOffset()
	if start <= prefixEnd {
		t.Fatalf("leader's log start %d, want above the follower's end %d", start, prefixEnd)
	}

	f = b2.follower(t, meta, b1, b2)
	defer f.Close()
	rnWaitEnd(t, b2.p, end)
	rnWaitHW(t, b2.p, end)
	if got := b2.p.LogStartOffset(); got != start {
		t.Fatalf("follower's log start %d, want the leader's %d", got, start)
	}
	// What the follower holds is the leader's, batch for batch.
	want, got := rsBatches(t, b1.p, start, end), rsBatches(t, b2.p, start, end)
	if len(want) != len(got) || len(want) == 0 {
		t.Fatalf("follower holds %d batches from %d, want the leader's %d", len(got), start, len(want))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("batch %d from %d differs from the leader's", i, start)
		}
	}
}

// rsBatches returns p's batches from from to end, each as its bytes.
func rsBatches(t *testing.T, p *partition.Partition, from, end int64) []string {
	t.Helper()
	var out []string
	for off := from; off < end; {
		v, err := p.Log().Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		data, err := v.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		data = slices.Clone(data)
		v.Release()
		next := off
		for rest := data; len(rest) > 0; {
			b, r, err := record.Parse(rest)
			if err != nil {
				break
			}
			rest = r
			if b.BaseOffset() >= off {
				out = append(out, string(b))
			}
			next = b.LastOffset() + 1
		}
		if next == off {
			t.Fatalf("no whole batch at %d", off)
		}
		off = next
	}
	return out
}
