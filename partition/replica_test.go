package partition

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// TestFollowerKeepsIdempotence: a follower that copied an idempotent
// producer's batches recognises the producer's retry as a duplicate once it
// is the leader (failover), accepts the next sequence and refuses a gap,
// and a truncation rewinds the producer state with the log.
func TestFollowerKeepsIdempotence(t *testing.T) {
	cfg := topic.Config{Flush: flushNone}
	leader := openT(t, nil, t.TempDir(), cfg, log.State{}, nil)
	if err := leader.SetLeaderEpoch(3); err != nil {
		t.Fatal(err)
	}
	const pid = 42
	for i := range 4 {
		if _, err := leader.AppendBatch(context.Background(), batchOf(t, record.CodecNone, pid, 0, int32(3*i), 3)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := leader.AppendBatch(context.Background(), batchOf(t, record.CodecNone, -1, 0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	copied := stored(t, leader, log.BoundLogEnd)
	follower := openT(t, nil, t.TempDir(), cfg, log.State{}, nil)
	if _, _, err := follower.AppendFollower(copied[:2]...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := follower.AppendFollower(copied[2:]...); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, follower, log.BoundLogEnd); len(got) != len(copied) || !bytes.Equal(got[3], copied[3]) {
		t.Fatalf("the follower holds %d batches, the leader %d", len(got), len(copied))
	}
	if _, _, err := follower.AppendFollower(copied[1]); !errors.Is(err, log.ErrNotAtLogEnd) {
		t.Fatalf("a batch below the follower's log end: %v", err)
	}
	if got, want := follower.Log().LeaderEpochs(), leader.Log().LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs: follower %v, leader %v", got, want)
	}

	// Failover: the follower leads epoch 4 and sees the producer retry its
	// last batch (sequence 9).
	if err := follower.SetLeaderEpoch(4); err != nil {
		t.Fatal(err)
	}
	res, err := follower.AppendBatch(context.Background(), batchOf(t, record.CodecNone, pid, 0, 9, 3))
	if err != nil || !res.Duplicate || res.BaseOffset != 9 || res.LastOffset != 11 {
		t.Fatalf("retry after failover: %+v, %v; want a duplicate at 9-11", res, err)
	}
	if _, err := follower.AppendBatch(context.Background(), batchOf(t, record.CodecNone, pid, 0, 13, 1)); !errors.Is(err, topic.ErrOutOfOrderSequence) {
		t.Fatalf("a sequence gap after failover: %v", err)
	}
	res, err = follower.AppendBatch(context.Background(), batchOf(t, record.CodecNone, pid, 0, 12, 1))
	if err != nil || res.Duplicate || res.BaseOffset != 14 {
		t.Fatalf("the next sequence after failover: %+v, %v", res, err)
	}
	if e, end := follower.EndOffsetForEpoch(3); e != 3 || end != 14 {
		t.Fatalf("EndOffsetForEpoch(3) = %d, %d; want 3, 14", e, end)
	}

	// Truncation back into epoch 3, before the producer's last batch: the
	// state forgets sequences 9-11 and 12, so sequence 9 is new again.
	if err := follower.TruncateTo(9); err != nil {
		t.Fatal(err)
	}
	// Epoch 4 is gone from the lineage; 3 ends at the new log end.
	if e, end := follower.EndOffsetForEpoch(4); e != log.UndefinedEpoch || end != log.UndefinedOffset {
		t.Fatalf("EndOffsetForEpoch(4) after the truncation = %d, %d; want undefined", e, end)
	}
	if e, end := follower.EndOffsetForEpoch(3); e != 3 || end != 9 {
		t.Fatalf("EndOffsetForEpoch(3) after the truncation = %d, %d; want 3, 9", e, end)
	}
	res, err = follower.AppendBatch(context.Background(), batchOf(t, record.CodecNone, pid, 0, 9, 3))
	if err != nil || res.Duplicate || res.BaseOffset != 9 {
		t.Fatalf("sequence 9 after the truncation: %+v, %v; want a new append at 9", res, err)
	}
}

// TestTruncateWakesReplicationWaiter: an acknowledgement held by
// Replication for records a truncation removes ends, with ErrUnknownOutcome
// wrapping log.ErrTruncated, instead of waiting for ever.
func TestTruncateWakesReplicationWaiter(t *testing.T) {
	repl := &acksAll{held: make(chan int64, 4)}
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, &Options{Replication: repl, RetentionCheckInterval: -1})
	done := make(chan error, 1)
	go func() {
		_, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, -1, 0, 0, 3))
		done <- err
	}()
	<-repl.held
	if err := p.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, log.ErrTruncated) {
		t.Fatalf("held append after a truncation below it: %v", err)
	}
}

// TestDamagedEpochCheckpointWarns: a garbage leader-epoch checkpoint is
// reported at Open, naming the file, and rebuilt from the batches.
func TestDamagedEpochCheckpointWarns(t *testing.T) {
	dir := t.TempDir()
	p := openT(t, nil, dir, topic.Config{Flush: flushNone}, log.State{}, nil)
	if err := p.SetLeaderEpoch(2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, -1, 0, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t-0", log.EpochCheckpointFile)
	if err := os.WriteFile(path, []byte("0\n1\n2 0 junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out logBuffer
	p2 := openT(t, nil, dir, topic.Config{Flush: flushNone}, p.Checkpoint(), &Options{Logger: out.logger(), RetentionCheckInterval: -1})
	if s := out.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "leader-epoch checkpoint damaged") || !strings.Contains(s, path) {
		t.Fatalf("logged: %s", s)
	}
	if got := p2.Log().LeaderEpochs(); !slices.Equal(got, []log.EpochEntry{{Epoch: 2, StartOffset: 0}}) {
		t.Fatalf("rebuilt epochs %v", got)
	}
}

// TestTruncateRetiresSnapshot: a producer-state snapshot covering records a
// truncation removes is retired first, so that once the log grows past its
// old end again (here with batches of no producer) a reopened partition
// does not take the removed batches' sequences for duplicates.
func TestTruncateRetiresSnapshot(t *testing.T) {
	dir := t.TempDir()
	snaps := &memSnapshots{}
	opts := &Options{Snapshots: snaps, RetentionCheckInterval: -1}
	cfg := topic.Config{Flush: flushNone}
	p := openT(t, nil, dir, cfg, log.State{}, opts)
	const pid = 7
	for i := range 3 {
		if _, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, pid, 0, int32(2*i), 2)); err != nil {
			t.Fatal(err)
		}
	}
	if saved, err := p.SaveProducerState(); err != nil || !saved {
		t.Fatalf("save: %v, %v", saved, err)
	}
	if err := p.TruncateTo(2); err != nil { // keeps sequences 0-1 only
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, -1, 0, 0, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p2 := openT(t, nil, dir, cfg, p.Checkpoint(), opts)
	res, err := p2.AppendBatch(context.Background(), batchOf(t, record.CodecNone, pid, 0, 2, 2))
	if err != nil || res.Duplicate || res.BaseOffset != 8 {
		t.Fatalf("sequence 2 after the truncation and a reopen: %+v, %v; want a new append at 8", res, err)
	}
}
