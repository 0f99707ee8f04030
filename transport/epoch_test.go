package transport

import (
	"context"
	"testing"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetForLeaderEpoch: the endpoint answers from the partition's
// leader-epoch cache: the current epoch ends at the log end, an earlier one
// where the next began, a later one is unknown; a stale current leader
// epoch is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH.
func TestOffsetForLeaderEpoch(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "t", topic.Config{Partitions: 1})
	ctx := testCtx(t)
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("t"))
	p, err := ts.b.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = current, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	// An empty partition: epoch 0 is current and ends at 0.
	if r := ask(-1, 0); r.ErrorCode != 0 || r.LeaderEpoch != 0 || r.EndOffset != 0 {
		t.Fatalf("empty partition, epoch 0: %+v", r)
	}
	produce := func(n int) {
		for range n {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(3)
	if err := p.SetLeaderEpoch(2); err != nil {
		t.Fatal(err)
	}
	produce(2)
	for _, c := range []struct {
		current, epoch int32
		code           int16
		wantEpoch      int32
		wantEnd        int64
	}{
		{-1, 2, 0, 2, 5},
		{2, 0, 0, 0, 3},
		{2, 1, 0, 0, 3},
		{2, 3, 0, -1, -1},
		{1, 2, kerr.FencedLeaderEpoch.Code, -1, -1},
		{3, 2, kerr.UnknownLeaderEpoch.Code, -1, -1},
	} {
		r := ask(c.current, c.epoch)
		if r.ErrorCode != c.code || r.LeaderEpoch != c.wantEpoch || r.EndOffset != c.wantEnd {
			t.Errorf("current %d, epoch %d: code %d, epoch %d, end %d; want %d, %d, %d",
				c.current, c.epoch, r.ErrorCode, r.LeaderEpoch, r.EndOffset, c.code, c.wantEpoch, c.wantEnd)
		}
	}
}
